import Foundation
import SQLKit

/// Who made a change, for the audit log.
public struct AuditActor: Sendable, Hashable {
    public let name: String
    public init(_ name: String) { self.name = name }
    /// The holder of the admin API token.
    public static let adminToken = AuditActor("admin-token")
    /// The server itself (start-up key creation, scheduled work).
    public static let system = AuditActor("system")
    /// A customer holding the license key: the app's own deactivate, the customer portal.
    public static let customer = AuditActor("customer")
    /// An offline device, through its request file or deactivation proof.
    public static let offline = AuditActor("offline")
}

extension Database {
    /// Records an admin action inside the transaction that makes the change, so the log and the
    /// change commit or roll back together.
    static func audit(
        _ db: any SQLDatabase, at now: Int64, actor: AuditActor, action: String,
        tenantId: String?, target: String?, details: [String: String] = [:]
    ) async throws {
        let json = (try? JSONSerialization.data(withJSONObject: details, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        try await db.raw("""
            INSERT INTO audit_log (at, actor, action, tenant_id, target, details)
            VALUES (\(bind: now), \(bind: actor.name), \(bind: action), \(bind: tenantId), \(bind: target), \(bind: json))
            """).run()
    }

    /// Audit entries newest first, optionally for one tenant, after `beforeId` for paging.
    public func auditLog(tenantId: String? = nil, limit: Int, beforeId: Int64? = nil) async throws -> [AuditEntry] {
        var query: SQLQueryString = "SELECT id, at, actor, action, tenant_id, target, details FROM audit_log WHERE 1 = 1"
        if let tenantId { query += " AND tenant_id = \(bind: tenantId)" }
        if let beforeId { query += " AND id < \(bind: beforeId)" }
        query += " ORDER BY id DESC LIMIT \(literal: limit)"
        return try await sql.raw(query).all(decoding: AuditEntry.self)
    }
}
