import Logging

extension PeriodicService {
    /// Delivers due webhooks every `interval`. Deliveries are rows, not tasks: whatever is due
    /// when the server stops is delivered by the next process to run.
    static func delivering(_ dispatcher: WebhookDispatcher, every interval: Duration, logger: Logger) -> PeriodicService {
        PeriodicService(interval: interval, tick: {
            do {
                try await dispatcher.deliverDue()
            } catch {
                logger.debug("could not claim webhook deliveries", metadata: ["error": "\(error)"])
            }
        })
    }
}
