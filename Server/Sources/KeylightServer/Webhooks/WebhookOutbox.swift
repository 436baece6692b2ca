import Foundation
import SQLKit

/// Writes webhook events into the outbox table, inside the transaction that makes the change,
/// so an event exists exactly when its change committed.
struct WebhookOutbox: Sendable {
    let sealer: SecretSealer

    static func payloadContext(eventId: String) -> String { "keylight.webhook.payload.\(eventId)" }
    static func secretContext(endpointId: String) -> String { "keylight.webhook.endpoint.\(endpointId)" }

    /// One pending delivery per enabled endpoint of the tenant that takes this event type; no
    /// rows, and only one cheap statement, when the tenant has none: the payload is encoded and
    /// sealed only for a subscriber (that was about a twentieth of an activation's CPU).
    ///
    /// The event type is matched as `'%,' || ? || ',%'`, not as a bound pattern: SQLite plans a
    /// `LIKE ?` for the value bound, so a kept statement was prepared again on every use.
    func enqueue(_ event: WebhookEvent, on db: any SQLDatabase) async throws {
        let subscribed = try await db.raw("""
            SELECT 1 AS one FROM webhook_endpoints e
            WHERE e.tenant_id = \(bind: event.tenant_id) AND e.enabled AND e.events LIKE '%,' || \(bind: event.type.rawValue) || ',%'
            LIMIT 1
            """).first()
        guard subscribed != nil else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let payload = try encoder.encode(event)
        let sealed = try sealer.seal(payload, context: Self.payloadContext(eventId: event.id))
        try await db.raw("""
            INSERT INTO webhook_deliveries (id, endpoint_id, tenant_id, event_id, event_type, sealed_payload, status, attempts, next_attempt_at, locked_until, created_at)
            SELECT CAST(\(bind: event.id + ":") AS TEXT) || e.id, e.id, e.tenant_id, \(bind: event.id), \(bind: event.type.rawValue),
                   \(bind: sealed), 'pending', 0, \(bind: event.created_at), 0, \(bind: event.created_at)
            FROM webhook_endpoints e
            WHERE e.tenant_id = \(bind: event.tenant_id) AND e.enabled AND e.events LIKE '%,' || \(bind: event.type.rawValue) || ',%'
            """).run()
    }
}

extension Optional where Wrapped == WebhookOutbox {
    /// Databases opened without an outbox (tools, storage tests) record no events.
    func enqueue(_ event: @autoclosure () -> WebhookEvent, on db: any SQLDatabase) async throws {
        guard let outbox = self else { return }
        try await outbox.enqueue(event(), on: db)
    }
}
