import SQLKit

/// Someone who signs in to the dashboard.
public struct DashboardUser: Codable, Sendable, Hashable {
    public var id: String
    public var email: String
    var passwordHash: String
    public var failedLogins: Int
    /// Unix seconds; 0 = not locked.
    public var lockedUntil: Int64
    public var createdAt: Int64
    public var lastLoginAt: Int64?
    /// The TOTP secret, sealed; set while enrolling, in use once `totpEnabledAt` is set.
    var totpSecret: String? = nil
    public var totpEnabledAt: Int64? = nil
    /// The last TOTP time step accepted: a code works once.
    var totpLastStep: Int64? = nil

    /// Whether sign-in asks for a second factor.
    public var hasTwoFactor: Bool { totpEnabledAt != nil && totpSecret != nil }

    enum CodingKeys: String, CodingKey {
        case id, email, passwordHash = "password_hash", failedLogins = "failed_logins", lockedUntil = "locked_until"
        case createdAt = "created_at", lastLoginAt = "last_login_at"
        case totpSecret = "totp_secret", totpEnabledAt = "totp_enabled_at", totpLastStep = "totp_last_step"
    }
}

extension Database {
    static let userColumns: SQLQueryString = "id, email, password_hash, failed_logins, locked_until, created_at, last_login_at, totp_secret, totp_enabled_at, totp_last_step"

    /// Inserts a user, or replaces the password of an existing one when `replacing`; false when
    /// the email is taken and not `replacing`. A new user gets `membership` in the same
    /// transaction (an existing user keeps theirs).
    public func saveDashboardUser(_ user: DashboardUser, replacing: Bool, membership: (tenantId: String, role: Role)? = nil, actor: AuditActor) async throws -> Bool {
        try await write { db in
            let conflict: SQLQueryString = replacing
                ? "ON CONFLICT (email) DO UPDATE SET password_hash = excluded.password_hash, failed_logins = 0, locked_until = 0"
                : "ON CONFLICT DO NOTHING"
            let saved = try await db.raw("""
                INSERT INTO dashboard_users (id, email, password_hash, failed_logins, locked_until, created_at, last_login_at) VALUES (
                    \(bind: user.id), \(bind: user.email), \(bind: user.passwordHash), 0, 0, \(bind: user.createdAt), \(bind: Int64?.none))
                \(conflict) RETURNING id
                """).first(decodingColumn: "id", as: String.self)
            guard let saved else { return false }
            try await Self.audit(db, at: user.createdAt, actor: actor, action: saved == user.id ? "dashboard_user.create" : "dashboard_user.password",
                                 tenantId: nil, target: user.email)
            if saved == user.id, let membership {
                try await db.raw("""
                    INSERT INTO team_memberships (user_id, tenant_id, role, created_at)
                    VALUES (\(bind: saved), \(bind: membership.tenantId), \(bind: membership.role.rawValue), \(bind: user.createdAt))
                    """).run()
                try await Self.audit(db, at: user.createdAt, actor: actor, action: "member.add", tenantId: Self.auditTenant(membership.tenantId), target: user.email, details: [
                    "role": membership.role.rawValue,
                ])
            }
            return true
        }
    }

    public func dashboardUser(email: String) async throws -> DashboardUser? {
        try await sql.raw("SELECT \(Self.userColumns) FROM dashboard_users WHERE email = \(bind: email)").first(decoding: DashboardUser.self)
    }

    public func dashboardUser(id: String) async throws -> DashboardUser? {
        try await sql.raw("SELECT \(Self.userColumns) FROM dashboard_users WHERE id = \(bind: id)").first(decoding: DashboardUser.self)
    }

    public func dashboardUsers() async throws -> [DashboardUser] {
        try await sql.raw("SELECT \(Self.userColumns) FROM dashboard_users ORDER BY email").all(decoding: DashboardUser.self)
    }

    /// Deletes a user with their memberships and sessions (audited); false when there is none
    /// with that email. The last owner of a tenant (or of every tenant) is not deleted.
    func deleteDashboardUser(email: String, now: Int64, actor: AuditActor) async throws -> Bool {
        let lock = lockRows(of: "m")
        return try await write { db in
            try await Self.lockOwners(db, lock)
            guard let id = try await db.raw("DELETE FROM dashboard_users WHERE email = \(bind: email) RETURNING id").first(decodingColumn: "id", as: String.self) else { return false }
            let owned = try await db.raw("""
                DELETE FROM team_memberships WHERE user_id = \(bind: id) RETURNING tenant_id, role
                """).all().compactMap { row -> String? in
                    (try? row.decode(column: "role", as: String.self)) == Role.owner.rawValue ? try? row.decode(column: "tenant_id", as: String.self) : nil
                }
            for tenantId in owned { try await Self.requireOwner(db, tenantId: tenantId) }
            try await Self.dropDelegations(db, of: id, tenantId: Membership.everyTenant, now: now, actor: actor)
            try await db.raw("DELETE FROM dashboard_recovery_codes WHERE user_id = \(bind: id)").run()
            try await Self.endAllUserSessions(db, userId: id, now: now)
            try await Self.audit(db, at: now, actor: actor, action: "dashboard_user.delete", tenantId: nil, target: email)
            return true
        }
    }

    func recordLogin(userId: String, now: Int64) async throws {
        try await write { db in
            try await db.raw("""
                UPDATE dashboard_users SET failed_logins = 0, locked_until = 0, last_login_at = \(bind: now) WHERE id = \(bind: userId)
                """).run()
        }
    }

    /// A sign-in event (success, failure, slow-down) in the audit log.
    func auditSignIn(action: String, actor: AuditActor, email: String, now: Int64, details: [String: String]) async throws {
        try await write { db in
            try await Self.audit(db, at: now, actor: actor, action: action, tenantId: nil, target: email, details: details)
        }
    }
}
