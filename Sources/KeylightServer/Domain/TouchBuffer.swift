import Logging
import NIOConcurrencyHelpers

/// Validation times waiting to be written. Validation is the hottest path and its only write
/// is "last seen"; batching those into one transaction a second keeps validate a pure read.
/// A crash can lose at most the last second of last-seen times, which are telemetry; graceful
/// shutdown flushes them.
final class TouchBuffer: Sendable {
    private let pending = NIOLockedValueBox<[String: Int64]>([:])

    func record(instanceId: String, at time: Int64) {
        pending.withLockedValue { pending in
            if (pending[instanceId] ?? .min) < time { pending[instanceId] = time }
        }
    }

    func drain() -> [String: Int64] {
        pending.withLockedValue { pending in
            defer { pending = [:] }
            return pending
        }
    }

    func restore(_ times: [String: Int64]) {
        pending.withLockedValue { pending in
            for (id, time) in times where (pending[id] ?? .min) < time { pending[id] = time }
        }
    }
}

extension PeriodicService {
    /// Writes buffered validation times every `interval`, and once more at shutdown.
    static func flushing(_ buffer: TouchBuffer, to database: Database, every interval: Duration, logger: Logger) -> PeriodicService {
        let flush: @Sendable () async -> Void = {
            let times = buffer.drain()
            guard !times.isEmpty else { return }
            do {
                try await database.touchInstances(times)
            } catch {
                // Keep them for the next round rather than drop them.
                buffer.restore(times)
                logger.debug("could not record validation times", metadata: ["error": "\(error)"])
            }
        }
        return PeriodicService(interval: interval, tick: flush, finish: flush)
    }
}
