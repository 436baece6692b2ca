import Foundation
import KeylightCore
import KeylightSigning
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// Delivers the webhook outbox: claims due deliveries, signs and posts them, records each
/// outcome. Any number of processes may run one against a shared database; a claim is a lease
/// longer than an attempt can last, so each attempt is made by one process and a crashed
/// attempt is retried after the lease.
///
/// Attempts run independently: the service keeps claiming while earlier attempts are in
/// flight, a slow receiver holds at most `perEndpoint` attempts (and none more until they end),
/// and every attempt ends within `requestTimeout`, response body included.
struct WebhookDispatcher: Sendable {
    let database: Database
    let sealer: SecretSealer
    let transport: any WebhookTransport
    let clock: any WallClock
    var schedule = RetrySchedule()
    /// Random numbers in [0, 1) for jitter.
    var unitRandom: @Sendable () -> Double = { Double.random(in: 0..<1) }
    var batchSize = 16
    /// Attempts in flight per endpoint, per process: a tenant's 20 endpoints hold at most 40.
    var perEndpoint = 2
    /// Attempts in flight per process (each is an outbound connection and a small task).
    var maxInFlight = 256
    /// The whole attempt: connect, request, response head and body.
    var requestTimeout: Duration = .seconds(15)
    /// How often the service looks for due deliveries when there were none.
    var pollInterval: Duration = .seconds(2)
    let logger: Logger

    /// Finished deliveries keep their (sealed) event this long, for redelivery.
    static let payloadRetentionDays: Int64 = 30

    /// A claim outlives the attempt it covers by a minute, so a live attempt is never claimed
    /// twice; recording the outcome fits in that margin.
    var claimLease: Int64 {
        let (seconds, attoseconds) = requestTimeout.components
        return seconds + (attoseconds > 0 ? 1 : 0) + 60
    }

    /// Attempts every delivery that is due now, waiting for each batch; returns how many were
    /// attempted. Tests and tools drive delivery with this; the server runs `run()`.
    @discardableResult
    func deliverDue() async throws -> Int {
        var attempted = 0
        while true {
            let batch = try await claim(limit: batchSize)
            attempted += batch.count
            await withTaskGroup(of: Void.self) { group in
                for delivery in batch { group.addTask { await attempt(delivery) } }
            }
            if batch.isEmpty || Task.isCancelled { return attempted }
        }
    }

    func claim(limit: Int) async throws -> [WebhookDelivery] {
        try await database.claimDueDeliveries(now: clock.unixSeconds, limit: limit, perEndpoint: perEndpoint, lease: claimLease)
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
            let transport = self.transport
            let url = endpoint.url
            let timeout = requestTimeout
            let status = try await withTotalDeadline(timeout) {
                try await transport.post(url: url, headers: headers, body: body, timeout: timeout)
            }
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

extension WebhookDispatcher: Service {
    /// Claims due deliveries whenever there is room, without waiting for earlier attempts; at
    /// graceful shutdown stops claiming and lets the attempts in flight end (each within its
    /// deadline) so their outcomes are recorded.
    func run() async throws {
        let inFlight = NIOLockedValueBox(0)
        await withDiscardingTaskGroup { group in
            var claimAtOnce = false
            while !Task.isShuttingDownGracefully {
                if !claimAtOnce {
                    do {
                        try await cancelWhenGracefulShutdown { try await Task.sleep(for: pollInterval) }
                    } catch {
                        break
                    }
                }
                let room = min(batchSize, maxInFlight - inFlight.withLockedValue { $0 })
                claimAtOnce = false
                guard room > 0 else { continue }
                do {
                    let batch = try await claim(limit: room)
                    inFlight.withLockedValue { $0 += batch.count }
                    for delivery in batch {
                        group.addTask {
                            await attempt(delivery)
                            inFlight.withLockedValue { $0 -= 1 }
                        }
                    }
                    // A full batch means more may be due: claim again without waiting.
                    claimAtOnce = batch.count == room
                } catch {
                    logger.debug("could not claim webhook deliveries", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}

/// The attempt took longer than its total deadline.
struct DeadlineExceeded: Error, CustomStringConvertible {
    var limit: Duration
    var description: String { "no complete answer within \(limit) (connect, head and body)" }
}

/// Runs `operation`, cancelling it once `limit` has passed; throws `DeadlineExceeded` then.
/// The operation must honour cancellation (async-http-client does, body included).
func withTotalDeadline<T: Sendable>(_ limit: Duration, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw DeadlineExceeded(limit: limit) }
        return value
    }
}
