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
    public func saveDashboardUser(_ user: DashboardUser, replacing: Bool, actor: Actor) async throws -> Bool {
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

    /// Counts a failed sign-in; locks the account for `lockFor` seconds once `threshold` failures
    /// in a row are reached. Answers the user as updated.
    func recordFailedLogin(userId: String, now: Int64, threshold: Int, lockFor: Int64) async throws -> DashboardUser? {
        try await write { db in
            try await db.raw("""
                UPDATE dashboard_users SET
                    failed_logins = failed_logins + 1,
                    locked_until = CASE WHEN failed_logins + 1 >= \(bind: threshold) THEN \(bind: now + lockFor) ELSE locked_until END
                WHERE id = \(bind: userId)
                RETURNING \(Self.userColumns)
                """).first(decoding: DashboardUser.self)
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
