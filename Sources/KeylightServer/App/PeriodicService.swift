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
