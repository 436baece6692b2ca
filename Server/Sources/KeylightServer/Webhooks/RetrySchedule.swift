/// When to try a failed delivery again: exponential backoff from `first`, capped at `cap`, each
/// delay scaled by a random factor in `1 ± jitter` (so a receiver that comes back is not hit by
/// every queued delivery at the same second), giving up once the next attempt would fall
/// outside `window` from the event.
///
/// With the defaults: 30 s, 1 min, 2 min, … 4.3 h, then every 6 h: about 17 attempts over two days.
struct RetrySchedule: Sendable {
    var first: Int64 = 30
    var cap: Int64 = 6 * 3_600
    var window: Int64 = 2 * 86_400
    var jitter = 0.2

    /// The base delay after the `attempt`-th failed attempt (1-based), before jitter.
    func baseDelay(afterAttempt attempt: Int) -> Int64 {
        let doublings = min(max(attempt - 1, 0), 40)
        let delay = first.multipliedReportingOverflow(by: Int64(1) << doublings)
        return delay.overflow ? cap : min(delay.partialValue, cap)
    }

    /// The time of the next attempt, or nil to give up. `unit` is a random number in [0, 1).
    func nextAttempt(afterAttempt attempt: Int, createdAt: Int64, now: Int64, unit: Double) -> Int64? {
        let base = Double(baseDelay(afterAttempt: attempt))
        let factor = 1 + jitter * (2 * min(max(unit, 0), 1) - 1)
        let next = now + max(1, Int64((base * factor).rounded()))
        return next - createdAt <= window ? next : nil
    }
}
