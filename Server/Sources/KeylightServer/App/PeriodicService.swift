import KeylightCore
import Logging
import ServiceLifecycle

/// Runs `tick` every `interval` until graceful shutdown, then `finish` once. Returning (not
/// throwing) at shutdown keeps the service group's shutdown orderly.
struct PeriodicService: Service {
    let interval: Duration
    let tick: @Sendable () async -> Void
    var finish: @Sendable () async -> Void = {}

    func run() async throws {
        while !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                break
            }
            await tick()
        }
        await finish()
    }
}

extension PeriodicService {
    /// Frees floating seats whose devices went silent: one indexed query per tick finds them,
    /// however many seats there are. A tick that frees a full batch goes again at once.
    static func sweepingSeats(of database: Database, every interval: Duration, clock: any WallClock, metrics: ServerMetrics, logger: Logger) -> PeriodicService {
        PeriodicService(interval: interval, tick: {
            let batch = 200
            for _ in 0..<50 {
                do {
                    let freed = try await database.expireFloatingSeats(now: clock.unixSeconds, batch: batch)
                    metrics.recordFloatingSeats("expired", count: freed)
                    if freed > 0 { logger.debug("freed floating seats", metadata: ["seats": .stringConvertible(freed)]) }
                    if freed < batch { return }
                } catch {
                    metrics.recordFloatingSeats("sweep_failed")
                    logger.debug("could not sweep floating seats", metadata: ["error": "\(error)"])
                    return
                }
            }
        })
    }
}
