import Logging
import ServiceLifecycle

/// Re-reads the signing keys every `interval`, so a rotation made by another server process
/// sharing the database is picked up without a restart.
struct KeyRingRefreshService: Service {
    let keyRing: KeyRing
    let interval: Duration
    let logger: Logger

    func run() async throws {
        while !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return
            }
            do {
                try await keyRing.reload()
            } catch {
                logger.debug("could not reload signing keys", metadata: ["error": "\(error)"])
            }
        }
    }
}
