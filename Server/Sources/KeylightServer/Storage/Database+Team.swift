import SQLKit

/// A user's role in one tenant, or (tenant `*`) in every tenant.
public struct Membership: Codable, Sendable, Hashable {
    public var userId: String
    /// `*`: every tenant.
    public var tenantId: String
    public var role: String
    public var createdAt: Int64

    public static let everyTenant = "*"

    enum CodingKeys: String, CodingKey {
        case userId = "user_id", tenantId = "tenant_id", role, createdAt = "created_at"
    }

    var grant: AccessGrant? {
        Role(rawValue: role).map { AccessGrant(tenantId: tenantId == Self.everyTenant ? nil : tenantId, role: $0) }
    }
}

/// A member as the team page lists them.
struct TeamMember: Codable, Sendable, Hashable {
    var userId: String
    var email: String
    var tenantId: String
    var role: String
    var twoFactor: Bool
    var lastLoginAt: Int64?

    enum CodingKeys: String, CodingKey {
        case userId = "user_id", email, tenantId = "tenant_id", role, twoFactor = "two_factor", lastLoginAt = "last_login_at"
    }
}

/// Why a membership change was refused.
enum TeamChangeError: Error, Equatable {
    /// The change would leave the tenant (or the server) without an owner.
    case lastOwner
    case notFound
}

extension Database {
    public func memberships(userId: String) async throws -> [Membership] {
        try await sql.raw("""
            SELECT user_id, tenant_id, role, created_at FROM team_memberships WHERE user_id = \(bind: userId) ORDER BY tenant_id
            """).all(decoding: Membership.self)
    }

    /// Members of a tenant, and the owners and members of every tenant (who reach it too).
    func teamMembers(tenantId: String) async throws -> [TeamMember] {
        try await sql.raw("""
            SELECT m.user_id, u.email, m.tenant_id, m.role, u.last_login_at,
                   CASE WHEN u.totp_enabled_at IS NULL THEN false ELSE true END AS two_factor
            FROM team_memberships m JOIN dashboard_users u ON u.id = m.user_id
            WHERE m.tenant_id = \(bind: tenantId) OR m.tenant_id = '*'
            ORDER BY m.tenant_id, u.email
            """).all(decoding: TeamMember.self)
    }

    /// Gives a user a role in a tenant (or `*`), replacing the one they had there (audited). A
    /// change that leaves the scope without an owner is refused.
    func setMembership(userId: String, email: String, tenantId: String, role: Role, now: Int64, actor: AuditActor) async throws {
        let lock = lockRows(of: "m")
        try await write { db in
            try await Self.lockOwners(db, lock)
            let previous = try await db.raw("""
                SELECT role FROM team_memberships WHERE user_id = \(bind: userId) AND tenant_id = \(bind: tenantId)
                """).first(decodingColumn: "role", as: String.self)
            if previous == role.rawValue { return }
            try await db.raw("""
                INSERT INTO team_memberships (user_id, tenant_id, role, created_at)
                VALUES (\(bind: userId), \(bind: tenantId), \(bind: role.rawValue), \(bind: now))
                ON CONFLICT (user_id, tenant_id) DO UPDATE SET role = excluded.role
                """).run()
            if previous == Role.owner.rawValue { try await Self.requireOwner(db, tenantId: tenantId) }
            if let previous = previous.flatMap(Role.init(rawValue:)), !role.permissions.isSuperset(of: previous.permissions) {
                try await Self.dropDelegations(db, of: userId, tenantId: tenantId, now: now, actor: actor)
            }
            try await Self.audit(db, at: now, actor: actor, action: previous == nil ? "member.add" : "member.role", tenantId: Self.auditTenant(tenantId), target: email, details: [
                "role": role.rawValue, "previous_role": previous ?? "",
            ].filter { !$0.value.isEmpty })
        }
    }

    /// Removes a user from a tenant (or `*`); refused for the last owner.
    func removeMembership(userId: String, email: String, tenantId: String, now: Int64, actor: AuditActor) async throws {
        let lock = lockRows(of: "m")
        try await write { db in
            try await Self.lockOwners(db, lock)
            guard let role = try await db.raw("""
                DELETE FROM team_memberships WHERE user_id = \(bind: userId) AND tenant_id = \(bind: tenantId) RETURNING role
                """).first(decodingColumn: "role", as: String.self) else { throw TeamChangeError.notFound }
            if role == Role.owner.rawValue { try await Self.requireOwner(db, tenantId: tenantId) }
            try await Self.dropDelegations(db, of: userId, tenantId: tenantId, now: now, actor: actor)
            try await Self.audit(db, at: now, actor: actor, action: "member.remove", tenantId: Self.auditTenant(tenantId), target: email, details: ["role": role])
        }
    }

    /// Inside a change that takes rights from a member: the tokens they made and the invitations
    /// they sent there (everywhere, for every tenant) go too, so nothing they handed out outlives
    /// their own rights.
    static func dropDelegations(_ db: any SQLDatabase, of userId: String, tenantId: String, now: Int64, actor: AuditActor) async throws {
        let scope = tenantId == Membership.everyTenant ? nil : tenantId
        try await revokeTokens(db, madeBy: userId, tenantId: scope, now: now, actor: actor, reason: "its maker lost the rights it came from")
        try await withdrawInvitations(db, sentBy: userId, tenantId: scope, now: now)
    }

    /// Where the database locks rows (PostgreSQL), a change that can take an owner away first
    /// locks every owner's row, so two owners demoting each other at once cannot both pass the
    /// check below on what the other has not committed yet (SQLite writes one at a time anyway).
    static func lockOwners(_ db: any SQLDatabase, _ lock: SQLQueryString) async throws {
        _ = try await db.raw("SELECT m.user_id FROM team_memberships m WHERE m.role = 'owner'\(lock)").all()
    }

    /// Inside a change: the scope still has an owner. A tenant counts the owners of every tenant
    /// too; every tenant (`*`) needs one of its own, so the server is never left ownerless.
    static func requireOwner(_ db: any SQLDatabase, tenantId: String) async throws {
        let owners = try await db.raw("""
            SELECT COUNT(*) AS n FROM team_memberships
            WHERE role = 'owner' AND (tenant_id = \(bind: tenantId) OR tenant_id = '*')
            """).first(decodingColumn: "n", as: Int.self) ?? 0
        if owners == 0 { throw TeamChangeError.lastOwner }
    }

    static func auditTenant(_ tenantId: String) -> String? { tenantId == Membership.everyTenant ? nil : tenantId }

    // MARK: Two factor required

    func setRequireTwoFactor(tenantId: String, _ required: Bool, now: Int64, actor: AuditActor) async throws {
        try await write { db in
            try await db.raw("UPDATE tenants SET require_two_factor = \(bind: required) WHERE id = \(bind: tenantId)").run()
            try await Self.audit(db, at: now, actor: actor, action: required ? "tenant.require_two_factor" : "tenant.allow_without_two_factor", tenantId: tenantId, target: tenantId)
        }
    }

    func tenantRequiresTwoFactor(tenantId: String) async throws -> Bool {
        try await sql.raw("SELECT require_two_factor FROM tenants WHERE id = \(bind: tenantId)").first(decodingColumn: "require_two_factor", as: Bool?.self).flatMap { $0 } ?? false
    }

    /// Whether any tenant the user reaches requires a second factor (every tenant for `*`).
    func twoFactorRequired(userId: String) async throws -> Bool {
        try await sql.raw("""
            SELECT COUNT(*) AS n FROM tenants t JOIN team_memberships m ON m.tenant_id = t.id OR m.tenant_id = '*'
            WHERE m.user_id = \(bind: userId) AND t.require_two_factor = \(bind: true)
            """).first(decodingColumn: "n", as: Int.self).map { $0 > 0 } ?? false
    }
}
