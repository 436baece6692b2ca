import SQLKit

extension Database {
    /// Writes what ``ChangeLog`` decided a change leaves behind (its audit row, its outbound
    /// event) inside the transaction on `db` that makes the change.
    static func record(_ entry: ChangeLog.Entry, on db: any SQLDatabase, outbox: WebhookOutbox?) async throws {
        if let audit = entry.audit {
            try await Self.audit(db, at: entry.at, actor: audit.actor, action: audit.action, tenantId: entry.tenantId, target: audit.target, details: audit.details)
        }
        if let event = entry.event { try await outbox.enqueue(event, on: db) }
    }
}
