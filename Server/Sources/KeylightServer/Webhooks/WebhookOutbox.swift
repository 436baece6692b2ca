import Foundation
import SQLKit

/// Writes webhook events into the outbox table, inside the transaction that makes the change,
/// so an event exists exactly when its change committed.
struct WebhookOutbox: Sendable {
    let sealer: SecretSealer

    static func payloadContext(eventId: String) -> String { "keylight.webhook.payload.\(eventId)" }
    static func secretContext(endpointId: String) -> String { "keylight.webhook.endpoint.\(endpointId)" }

    /// Whether the tenant `tenant` (an SQL expression: a column, or a bound id) has an enabled
    /// endpoint that takes `type`, as an SQL boolean: for a statement that reads it along with
    /// what it is there for, and the outbox's own check.
    static func subscribed(to type: WebhookEventType, tenant: SQLQueryString) -> SQLQueryString {
        "EXISTS (SELECT 1 FROM webhook_endpoints e WHERE \(endpoints(taking: type, tenant: tenant)))"
    }

    /// The event type is matched as `'%,' || ? || ',%'`, not as a bound pattern: SQLite plans a
    /// `LIKE ?` for the value bound, so a kept statement was prepared again on every use.
    private static func endpoints(taking type: WebhookEventType, tenant: SQLQueryString) -> SQLQueryString {
        "e.tenant_id = \(tenant) AND e.enabled AND e.events LIKE '%,' || \(bind: type.rawValue) || ',%'"
    }

    /// One pending delivery per enabled endpoint of the tenant that takes this event type; no
    /// rows, and only one cheap statement, when the tenant has none: the payload is encoded and
    /// sealed only for a subscriber (that was about a twentieth of an activation's CPU).
    /// `subscribed`, read by the caller earlier in the same transaction (with
    /// ``subscribed(to:tenant:)``), saves that statement.
    func enqueue(_ event: WebhookEvent, on db: any SQLDatabase, subscribed: Bool? = nil) async throws {
        let tenant: SQLQueryString = "\(bind: event.tenant_id)"
        if let subscribed {
            guard subscribed else { return }
        } else {
            let row = try await db.raw("SELECT \(Self.subscribed(to: event.type, tenant: tenant)) AS subscribed").first()
            guard let row, try row.decode(column: "subscribed", as: Bool.self) else { return }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let payload = try encoder.encode(event)
        let sealed = try sealer.seal(payload, context: Self.payloadContext(eventId: event.id))
        try await db.raw("""
            INSERT INTO webhook_deliveries (id, endpoint_id, tenant_id, event_id, event_type, sealed_payload, status, attempts, next_attempt_at, locked_until, created_at)
            SELECT CAST(\(bind: event.id + ":") AS TEXT) || e.id, e.id, e.tenant_id, \(bind: event.id), \(bind: event.type.rawValue),
                   \(bind: sealed), 'pending', 0, \(bind: event.created_at), 0, \(bind: event.created_at)
            FROM webhook_endpoints e
            WHERE \(Self.endpoints(taking: event.type, tenant: tenant))
            """).run()
    }
}

extension Optional where Wrapped == WebhookOutbox {
    /// Databases opened without an outbox (tools, storage tests) record no events.
    func enqueue(_ event: @autoclosure () -> WebhookEvent, on db: any SQLDatabase, subscribed: Bool? = nil) async throws {
        guard let outbox = self else { return }
        try await outbox.enqueue(event(), on: db, subscribed: subscribed)
    }
}
