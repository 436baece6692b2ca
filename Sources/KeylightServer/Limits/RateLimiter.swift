import NIOConcurrencyHelpers

/// Token-bucket rate limiting keyed by client address or license, in memory and per process.
///
/// Each key holds up to `burst` tokens, refilled at `perMinute / 60` per second. Several server
/// processes each keep their own buckets (documented in the README): a client spread across N
/// processes by a load balancer gets up to N times the rate.
public final class RateLimiter: Sendable {
    /// A limit: sustained requests per minute and the burst allowed above it.
    public struct Limit: Sendable, Hashable {
        public var perMinute: Int
        public var burst: Int
        public init(perMinute: Int, burst: Int) {
            self.perMinute = perMinute
            self.burst = burst
        }
        /// No limit at all (benchmarks, tests).
        public static let unlimited = Limit(perMinute: 0, burst: 0)
        var isUnlimited: Bool { perMinute <= 0 }
    }

    /// The outcome of one request.
    public enum Decision: Equatable, Sendable {
        case allowed
        /// Refused; the client may retry after this many whole seconds (at least 1).
        case limited(retryAfter: Int)
    }

    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    private struct State {
        var buckets: [String: Bucket] = [:]
        var lastSweep: Double = 0
    }

    public let limit: Limit
    private let state: NIOLockedValueBox<State>
    /// Buckets idle long enough to have refilled are dropped, so memory tracks active clients only.
    private let maxKeys: Int

    public init(limit: Limit, maxKeys: Int = 100_000) {
        self.limit = limit
        self.maxKeys = maxKeys
        self.state = NIOLockedValueBox(State())
    }

    /// Takes one token for `key` at time `now` (seconds, any monotonic origin).
    public func acquire(_ key: String, now: Double) -> Decision {
        guard !limit.isUnlimited else { return .allowed }
        let rate = Double(limit.perMinute) / 60
        let capacity = Double(max(limit.burst, 1))
        return state.withLockedValue { state in
            if state.buckets.count >= maxKeys || now - state.lastSweep > 60 {
                let idle = capacity / rate
                state.buckets = state.buckets.filter { now - $0.value.updated < idle }
                state.lastSweep = now
            }
            var bucket = state.buckets[key] ?? Bucket(tokens: capacity, updated: now)
            bucket.tokens = min(capacity, bucket.tokens + max(0, now - bucket.updated) * rate)
            bucket.updated = now
            defer { state.buckets[key] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return .allowed
            }
            return .limited(retryAfter: max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))))
        }
    }
}
