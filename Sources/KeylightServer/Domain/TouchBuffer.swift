import Logging
import NIOConcurrencyHelpers

/// One product's day (UTC) in the usage counts.
struct UsageDay: Hashable, Sendable {
    var tenantId: String
    var productId: String
    /// Days since 1970-01-01 UTC.
    var day: Int64
}

/// Successful activations and validations counted for one ``UsageDay``.
struct UsageCount: Sendable, Equatable {
    var activations = 0
    var validations = 0

    static func += (lhs: inout UsageCount, rhs: UsageCount) {
        lhs.activations += rhs.activations
        lhs.validations += rhs.validations
    }
}

/// What the SDK paths record but need not write at once: validation times ("last seen") and
/// the per-day usage counts the dashboard charts. Validation is the hottest path; batching
/// these into one transaction a second keeps validate a pure read. A crash can lose at most the
/// last second of this telemetry; graceful shutdown flushes it.
final class TouchBuffer: Sendable {
    struct Batch: Sendable {
        var times: [String: Int64] = [:]
        var usage: [UsageDay: UsageCount] = [:]
        var isEmpty: Bool { times.isEmpty && usage.isEmpty }
    }

    private let pending = NIOLockedValueBox(Batch())

    /// A successful validation: the instance's last-seen time and the product's count, under one lock (the hot path).
    func validated(instanceId: String, tenantId: String, productId: String, at time: Int64) {
        let key = UsageDay(tenantId: tenantId, productId: productId, day: time.flooringDivided(by: 86_400))
        pending.withLockedValue { pending in
            if (pending.times[instanceId] ?? .min) < time { pending.times[instanceId] = time }
            pending.usage[key, default: UsageCount()] += UsageCount(validations: 1)
        }
    }

    /// A successful activation, counted for the product's day at `time`.
    func activated(tenantId: String, productId: String, at time: Int64) {
        let key = UsageDay(tenantId: tenantId, productId: productId, day: time.flooringDivided(by: 86_400))
        pending.withLockedValue { pending in pending.usage[key, default: UsageCount()] += UsageCount(activations: 1) }
    }

    func drain() -> Batch {
        pending.withLockedValue { pending in
            defer { pending = Batch() }
            return pending
        }
    }

    func restore(_ batch: Batch) {
        pending.withLockedValue { pending in
            for (id, time) in batch.times where (pending.times[id] ?? .min) < time { pending.times[id] = time }
            for (key, count) in batch.usage { pending.usage[key, default: UsageCount()] += count }
        }
    }
}

extension Int64 {
    /// Division rounding towards negative infinity (days before 1970 stay on their own day).
    func flooringDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}

extension PeriodicService {
    /// Writes buffered validation times and usage counts every `interval`, and once more at shutdown.
    static func flushing(_ buffer: TouchBuffer, to database: Database, every interval: Duration, logger: Logger) -> PeriodicService {
        let flush: @Sendable () async -> Void = {
            let batch = buffer.drain()
            guard !batch.isEmpty else { return }
            do {
                try await database.touchInstances(batch.times, usage: batch.usage)
            } catch {
                // Keep them for the next round rather than drop them.
                buffer.restore(batch)
                logger.debug("could not record validation times", metadata: ["error": "\(error)"])
            }
        }
        return PeriodicService(interval: interval, tick: flush, finish: flush)
    }
}
