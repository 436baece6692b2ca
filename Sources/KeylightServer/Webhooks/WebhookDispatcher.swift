import Foundation
import KeylightCore
import Logging

/// Delivers the webhook outbox: claims due deliveries, signs and posts them, records each
/// outcome. Any number of processes may run one against a shared database; a claim is a lease,
/// so each attempt is made by one process and a crashed attempt is retried after the lease.
struct WebhookDispatcher: Sendable {
    let database: Database
    let sealer: SecretSealer
    let transport: any WebhookTransport
    let clock: any WallClock
    var schedule = RetrySchedule()
    /// Random numbers in [0, 1) for jitter.
    var unitRandom: @Sendable () -> Double = { Double.random(in: 0..<1) }
    var batchSize = 16
    var requestTimeout: Duration = .seconds(15)
    /// Longer than a request can take, so a live attempt is never claimed twice.
    var claimLease: Int64 = 60
    let logger: Logger

    /// Attempts every delivery that is due now, in batches; returns how many were attempted.
    @discardableResult
    func deliverDue() async throws -> Int {
        var attempted = 0
        while true {
            let batch = try await database.claimDueDeliveries(now: clock.unixSeconds, limit: batchSize, lease: claimLease)
            attempted += batch.count
            await withTaskGroup(of: Void.self) { group in
                for delivery in batch { group.addTask { await attempt(delivery) } }
            }
            if batch.count < batchSize || Task.isCancelled { return attempted }
        }
    }

    /// One attempt; never throws (a failure to record is logged, and the lease makes it due again).
    func attempt(_ delivery: WebhookDelivery) async {
        let result = await send(delivery)
        do {
            try await database.recordDelivery(delivery, result: result, now: clock.unixSeconds)
        } catch {
            logger.warning("could not record a webhook delivery", metadata: ["delivery": .string(delivery.id), "error": .string("\(error)")])
        }
    }

    private func send(_ delivery: WebhookDelivery) async -> DeliveryResult {
        let endpoint: WebhookEndpoint?
        do {
            endpoint = try await database.webhookEndpoint(tenantId: delivery.tenantId, id: delivery.endpointId)
        } catch {
            return retry(delivery, statusCode: nil, error: "database: \(error)")
        }
        guard let endpoint, endpoint.enabled else { return .stopped(reason: "The endpoint was disabled.") }
        guard let sealedPayload = delivery.sealedPayload,
              let payload = try? sealer.open(sealedPayload, context: WebhookOutbox.payloadContext(eventId: delivery.eventId)),
              let secretBytes = try? sealer.open(endpoint.sealedSecret, context: WebhookOutbox.secretContext(endpointId: endpoint.id)) else {
            return .failed(statusCode: nil, error: "The stored payload or secret cannot be opened with this server's master key.")
        }
        let body = Array(payload)
        let timestamp = clock.unixSeconds
        let headers = [
            ("Content-Type", "application/json"),
            ("User-Agent", "Keylight-Webhooks/1"),
            ("Keylight-Signature", WebhookSignature.header(timestamp: timestamp, body: body, secret: String(decoding: secretBytes, as: UTF8.self))),
            ("Keylight-Event-Id", delivery.eventId),
            ("Keylight-Event-Type", delivery.eventType),
            ("Keylight-Delivery-Id", delivery.id),
            ("Keylight-Delivery-Attempt", String(delivery.attempts)),
        ]
        logger.debug("delivering webhook", metadata: ["delivery": .string(delivery.id), "event_type": .string(delivery.eventType), "attempt": .stringConvertible(delivery.attempts)])
        do {
            let status = try await transport.post(url: endpoint.url, headers: headers, body: body, timeout: requestTimeout)
            switch status {
            case 200..<300: return .delivered(statusCode: status)
            case 410: return .gone
            default: return retry(delivery, statusCode: status, error: "HTTP \(status)")
            }
        } catch {
            return retry(delivery, statusCode: nil, error: String(describing: error).prefix(500).description)
        }
    }

    private func retry(_ delivery: WebhookDelivery, statusCode: Int?, error: String) -> DeliveryResult {
        if let at = schedule.nextAttempt(afterAttempt: delivery.attempts, createdAt: delivery.createdAt, now: clock.unixSeconds, unit: unitRandom()) {
            return .retry(at: at, statusCode: statusCode, error: error)
        }
        return .failed(statusCode: statusCode, error: error)
    }
}
