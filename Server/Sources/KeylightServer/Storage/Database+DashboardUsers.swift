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

    enum CodingKeys: String, CodingKey {
        case id, email, passwordHash = "password_hash", failedLogins = "failed_logins", lockedUntil = "locked_until"
        case createdAt = "created_at", lastLoginAt = "last_login_at"
    }
}

extension Database {
    static let userColumns: SQLQueryString = "id, email, password_hash, failed_logins, locked_until, created_at, last_login_at"

    /// Inserts a user, or replaces the password of an existing one when `replacing`; false when
    /// the email is taken and not `replacing`.
    public func saveDashboardUser(_ user: DashboardUser, replacing: Bool, actor: AuditActor) async throws -> Bool {
        try await write { db in
            let conflict: SQLQueryString = replacing
                ? "ON CONFLICT (email) DO UPDATE SET password_hash = excluded.password_hash, failed_logins = 0, locked_until = 0"
                : "ON CONFLICT DO NOTHING"
            let saved = try await db.raw("""
                INSERT INTO dashboard_users (\(Self.userColumns)) VALUES (
                    \(bind: user.id), \(bind: user.email), \(bind: user.passwordHash), 0, 0, \(bind: user.createdAt), \(bind: Int64?.none))
                \(conflict) RETURNING id
                """).first(decodingColumn: "id", as: String.self)
            guard let saved else { return false }
            try await Self.audit(db, at: user.createdAt, actor: actor, action: saved == user.id ? "dashboard_user.create" : "dashboard_user.password",
                                 tenantId: nil, target: user.email)
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

    /// Counts a sign-in attempt for `email` before its password is checked (a success resets
    /// the count): answers the user when the attempt may go on, nil when the email is unknown or
    /// the account is locked. The attempt that reaches `threshold` locks the account for
    /// `lockFor` seconds; once a lock has run out the count starts again from zero, so a slow
    /// trickle of wrong guesses cannot keep the account locked for good.
    func beginLoginAttempt(email: String, now: Int64, threshold: Int, lockFor: Int64) async throws -> DashboardUser? {
        try await write { db in
            let attempts: SQLQueryString = "(CASE WHEN locked_until <> 0 AND locked_until <= \(bind: now) THEN 1 ELSE failed_logins + 1 END)"
            return try await db.raw("""
                UPDATE dashboard_users SET
                    failed_logins = \(attempts),
                    locked_until = CASE WHEN \(attempts) >= \(bind: threshold) THEN \(bind: now + lockFor) ELSE 0 END
                WHERE email = \(bind: email) AND locked_until <= \(bind: now)
                RETURNING \(Self.userColumns)
                """).first(decoding: DashboardUser.self)
        }
    }

    /// Deletes a user (audited); false when there is none with that email.
    func deleteDashboardUser(email: String, now: Int64, actor: AuditActor) async throws -> Bool {
        try await write { db in
            guard try await db.raw("DELETE FROM dashboard_users WHERE email = \(bind: email) RETURNING id").first() != nil else { return false }
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
}
