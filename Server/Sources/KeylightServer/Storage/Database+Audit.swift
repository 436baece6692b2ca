import Foundation
import SQLKit

/// Who made a change, for the audit log.
public struct AuditActor: Sendable, Hashable {
    /// What the log shows: `user:<email>`, `token:<name>`, `admin-token`, a provider's name, `system`…
    public let name: String
    /// Which kind of actor: ``Kind``.
    public var kind: Kind
    /// The user's or token's id (the name of a token can be reused; its id cannot).
    public var id: String?
    /// Where the request came from, and its user agent (users and tokens).
    public var address: String?
    public var userAgent: String?

    /// Who acts: the audit log filters by it.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A dashboard user.
        case user
        /// An admin API token (the owner's bootstrap token included).
        case token
        /// A payment provider or the App Store, through its signed notifications.
        case provider
        /// A buyer holding a license key: the app, the portal, an offline device.
        case customer
        /// The server itself (start-up, scheduled work, the `keylight` CLI on its machine).
        case system
    }

    public init(_ name: String) {
        self.name = name
        self.kind = Self.kind(of: name)
    }

    public init(name: String, kind: Kind, id: String?, address: String? = nil, userAgent: String? = nil) {
        self.name = name
        self.kind = kind
        self.id = id
        self.address = address
        self.userAgent = userAgent.map { String($0.prefix(300)) }
    }

    /// The kind of an actor written by name alone (and by processes that wrote no kind).
    static func kind(of name: String) -> Kind {
        if name.hasPrefix("user:") { return .user }
        if name.hasPrefix("token:") || name == "admin-token" { return .token }
        if name == "system" || name.hasPrefix("cli") { return .system }
        if name == "customer" || name == "offline" { return .customer }
        return .provider
    }

    /// The same actor, seen from where the request came.
    func from(address: String?, userAgent: String?) -> AuditActor {
        AuditActor(name: name, kind: kind, id: id, address: address, userAgent: userAgent)
    }

    /// The holder of the admin API token.
    public static let adminToken = AuditActor(name: "admin-token", kind: .token, id: "owner")
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
            INSERT INTO audit_log (at, actor, action, tenant_id, target, details, actor_kind, actor_id, actor_address, actor_user_agent)
            VALUES (\(bind: now), \(bind: actor.name), \(bind: action), \(bind: tenantId), \(bind: target), \(bind: json),
                    \(bind: actor.kind.rawValue), \(bind: actor.id), \(bind: actor.address), \(bind: actor.userAgent))
            """).run()
    }

    /// Audit entries newest first, after `beforeId` for paging, filtered by ``AuditFilter``.
    public func auditLog(tenantId: String? = nil, limit: Int, beforeId: Int64? = nil) async throws -> [AuditEntry] {
        try await auditLog(AuditFilter(tenants: .all, tenantId: tenantId), limit: limit, beforeId: beforeId)
    }

    func auditLog(_ filter: AuditFilter, limit: Int, beforeId: Int64? = nil) async throws -> [AuditEntry] {
        var query: SQLQueryString = """
            SELECT id, at, actor, action, tenant_id, target, details, actor_kind, actor_id, actor_address, actor_user_agent FROM audit_log WHERE 1 = 1
            """
        switch filter.tenants {
        case .all: break
        case .only(let ids):
            // Entries of no tenant (server-wide) are for those who see every tenant.
            guard !ids.isEmpty else { return [] }
            query += " AND tenant_id IN (\(binds: ids.sorted()))"
        }
        if let tenantId = filter.tenantId { query += " AND tenant_id = \(bind: tenantId)" }
        if let actor = filter.actor { query += " AND actor = \(bind: actor)" }
        if let kind = filter.actorKind { query += " AND actor_kind = \(bind: kind.rawValue)" }
        if let id = filter.actorId { query += " AND actor_id = \(bind: id)" }
        if let action = filter.action { query += " AND action = \(bind: action)" }
        if let beforeId { query += " AND id < \(bind: beforeId)" }
        query += " ORDER BY id DESC LIMIT \(literal: limit)"
        return try await sql.raw(query).all(decoding: AuditEntry.self)
    }
}

/// Which audit entries to read: the tenants the reader may see, then optional filters.
struct AuditFilter: Sendable {
    var tenants: TenantFilter
    var tenantId: String? = nil
    /// The actor as the log shows it (`user:ann@example.com`, `token:ci`).
    var actor: String? = nil
    var actorKind: AuditActor.Kind? = nil
    var actorId: String? = nil
    var action: String? = nil
}
