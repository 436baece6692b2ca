import SQLKit

extension Database {
    /// Writes what ``ChangeLog`` decided a change leaves behind (its audit row, its outbound
    /// event) inside the transaction on `db` that makes the change.
    /// `subscribed`: whether an endpoint takes events of that type, when the caller read it in
    /// the same transaction (see ``WebhookOutbox/subscribed(to:tenant:)``).
    static func record(
        _ entry: ChangeLog.Entry, on db: any SQLDatabase, outbox: WebhookOutbox?, subscribed: (type: WebhookEventType, value: Bool)? = nil
    ) async throws {
        if let audit = entry.audit {
            try await Self.audit(db, at: entry.at, actor: audit.actor, action: audit.action, tenantId: entry.tenantId, target: audit.target, details: audit.details)
        }
        if let event = entry.event {
            try await outbox.enqueue(event, on: db, subscribed: subscribed.flatMap { $0.type == event.type ? $0.value : nil })
        }
    }
}
