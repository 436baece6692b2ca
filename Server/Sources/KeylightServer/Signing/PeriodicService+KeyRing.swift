import Logging

extension PeriodicService {
    /// Re-reads the signing keys every `interval`, so a rotation made by another server process
    /// sharing the database is picked up without a restart.
    static func refreshing(_ keyRing: KeyRing, every interval: Duration, logger: Logger) -> PeriodicService {
        PeriodicService(interval: interval, tick: {
            do {
                try await keyRing.reload()
            } catch {
                logger.debug("could not reload signing keys", metadata: ["error": "\(error)"])
            }
        })
    }
}
