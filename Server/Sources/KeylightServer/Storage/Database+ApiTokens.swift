import SQLKit

/// A named admin API token: what it may do, where, until when, and when it was last used. The
/// secret is kept as its hash only.
public struct ApiTokenRecord: Codable, Sendable, Hashable {
    public var id: String
    public var name: String
    /// nil: every tenant.
    public var tenantId: String?
    public var productId: String?
    /// Comma-separated permission names (nil when the token has a role).
    public var permissions: String?
    public var role: String?
    /// The actor that made it (`user:…`, `token:…`).
    public var createdBy: String
    /// The user's or token's id: revoking that token, or the user leaving, revokes this one.
    public var createdById: String?
    public var createdAt: Int64
    public var expiresAt: Int64?
    public var lastUsedAt: Int64?
    public var lastUsedAddress: String?
    public var revokedAt: Int64?

    enum CodingKeys: String, CodingKey {
        case id, name, permissions, role
        case tenantId = "tenant_id", productId = "product_id", createdBy = "created_by", createdById = "created_by_id", createdAt = "created_at"
        case expiresAt = "expires_at", lastUsedAt = "last_used_at", lastUsedAddress = "last_used_address", revokedAt = "revoked_at"
    }

    /// What the token may do (unknown names, from a newer release, grant nothing).
    var grant: AccessGrant {
        if let role = role.flatMap(Role.init(rawValue:)) {
            return AccessGrant(tenantId: tenantId, productId: productId, role: role)
        }
        let names = (permissions ?? "").split(separator: ",").compactMap { Permission(rawValue: String($0)) }
        return AccessGrant(tenantId: tenantId, productId: productId, permissions: Set(names))
    }

    /// Whether it still works at `now`.
    func isLive(at now: Int64) -> Bool { revokedAt == nil && (expiresAt.map { $0 > now } ?? true) }

    var actor: AuditActor { AuditActor(name: "token:\(name)", kind: .token, id: id) }
}

extension Database {
    static let apiTokenColumns: SQLQueryString = """
        id, name, tenant_id, product_id, permissions, role, created_by, created_by_id, created_at, expires_at, last_used_at, last_used_address, revoked_at
        """

    func insertApiToken(_ token: ApiTokenRecord, hash: String, actor: AuditActor) async throws {
        try await write { db in
            try await db.raw("""
                INSERT INTO api_tokens (id, name, token_hash, tenant_id, product_id, permissions, role, created_by, created_by_id, created_at, expires_at)
                VALUES (\(bind: token.id), \(bind: token.name), \(bind: hash), \(bind: token.tenantId), \(bind: token.productId), \(bind: token.permissions),
                        \(bind: token.role), \(bind: token.createdBy), \(bind: token.createdById), \(bind: token.createdAt), \(bind: token.expiresAt))
                """).run()
            var details = ["token_id": token.id, "name": token.name]
            details["role"] = token.role
            details["permissions"] = token.permissions
            details["product_id"] = token.productId
            details["expires_at"] = token.expiresAt.map(String.init)
            try await Self.audit(db, at: token.createdAt, actor: actor, action: "token.create", tenantId: token.tenantId, target: token.id, details: details)
        }
    }

    /// The token a secret's hash names, live or not (the caller checks).
    func apiToken(hash: String) async throws -> ApiTokenRecord? {
        try await sql.raw("SELECT \(Self.apiTokenColumns) FROM api_tokens WHERE token_hash = \(bind: hash)").first(decoding: ApiTokenRecord.self)
    }

    func apiToken(id: String) async throws -> ApiTokenRecord? {
        try await sql.raw("SELECT \(Self.apiTokenColumns) FROM api_tokens WHERE id = \(bind: id)").first(decoding: ApiTokenRecord.self)
    }

    /// Tokens of the tenants in `filter` (tokens over every tenant only for `.all`), newest first.
    func apiTokens(_ filter: TenantFilter, tenantId: String? = nil) async throws -> [ApiTokenRecord] {
        var query: SQLQueryString = "SELECT \(Self.apiTokenColumns) FROM api_tokens WHERE 1 = 1"
        switch filter {
        case .all: break
        case .only(let ids):
            guard !ids.isEmpty else { return [] }
            query += " AND tenant_id IN (\(binds: ids.sorted()))"
        }
        if let tenantId { query += " AND tenant_id = \(bind: tenantId)" }
        query += " ORDER BY created_at DESC, id LIMIT 500"
        return try await sql.raw(query).all(decoding: ApiTokenRecord.self)
    }

    /// Records a use at most once a minute per token, so a busy CI token does not write on every
    /// request.
    func touchApiToken(id: String, now: Int64, address: String?) async throws {
        try await write { db in
            try await db.raw("""
                UPDATE api_tokens SET last_used_at = \(bind: now), last_used_address = \(bind: address)
                WHERE id = \(bind: id) AND (last_used_at IS NULL OR last_used_at < \(bind: now - 60) OR last_used_address IS NULL
                       OR last_used_address <> \(bind: address ?? ""))
                """).run()
        }
    }

    /// Revokes a token (audited), and every live token it made, and theirs; false when it was
    /// already revoked or is not there.
    func revokeApiToken(id: String, now: Int64, actor: AuditActor) async throws -> Bool {
        try await write { db in
            guard let row = try await db.raw("""
                UPDATE api_tokens SET revoked_at = \(bind: now) WHERE id = \(bind: id) AND revoked_at IS NULL RETURNING tenant_id, name
                """).first() else { return false }
            let tenantId = try row.decodeNil(column: "tenant_id") ? nil : try row.decode(column: "tenant_id", as: String.self)
            try await Self.audit(db, at: now, actor: actor, action: "token.revoke", tenantId: tenantId, target: id, details: [
                "name": try row.decode(column: "name", as: String.self),
            ])
            try await Self.revokeTokens(db, madeBy: id, tenantId: nil, now: now, actor: actor, reason: "its maker was revoked")
            return true
        }
    }

    /// Inside a change: revokes the live tokens `creatorId` made (in one tenant, or in all for
    /// nil), and the tokens those made, audited with `reason`.
    static func revokeTokens(_ db: any SQLDatabase, madeBy creatorId: String, tenantId: String?, now: Int64, actor: AuditActor, reason: String) async throws {
        var makers = [creatorId]
        var depth = 0
        while !makers.isEmpty, depth < 16 {
            var query: SQLQueryString = "UPDATE api_tokens SET revoked_at = \(bind: now) WHERE created_by_id IN (\(binds: makers)) AND revoked_at IS NULL"
            if let tenantId, depth == 0 { query += " AND tenant_id = \(bind: tenantId)" }
            query += " RETURNING id, tenant_id, name"
            let rows = try await db.raw(query).all()
            makers = []
            for row in rows {
                let id = try row.decode(column: "id", as: String.self)
                let tenant = try row.decodeNil(column: "tenant_id") ? nil : try row.decode(column: "tenant_id", as: String.self)
                try await audit(db, at: now, actor: actor, action: "token.revoke", tenantId: tenant, target: id, details: [
                    "name": try row.decode(column: "name", as: String.self), "reason": reason,
                ])
                makers.append(id)
            }
            depth += 1
        }
    }
}
