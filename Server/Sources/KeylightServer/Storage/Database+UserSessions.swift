import SQLKit

/// A dashboard session as its user sees it on the sessions page.
struct UserSession: Codable, Sendable, Hashable {
    var sid: String
    var userId: String
    var createdAt: Int64
    var lastSeenAt: Int64
    var address: String?
    var userAgent: String?

    enum CodingKeys: String, CodingKey {
        case sid, userId = "user_id", createdAt = "created_at", lastSeenAt = "last_seen_at", address, userAgent = "user_agent"
    }
}

extension Database {
    func createUserSession(_ session: UserSession) async throws {
        try await write { db in
            try await db.raw("""
                INSERT INTO dashboard_user_sessions (sid, user_id, created_at, last_seen_at, address, user_agent)
                VALUES (\(bind: session.sid), \(bind: session.userId), \(bind: session.createdAt), \(bind: session.lastSeenAt),
                        \(bind: session.address), \(bind: session.userAgent.map { String($0.prefix(300)) }))
                """).run()
        }
    }

    /// Whether the session is live (not ended, not idle since `idleSince`); marks it seen at
    /// `now`, at most once a minute so that browsing does not write on every page.
    func touchUserSession(sid: String, userId: String, now: Int64, idleSince: Int64) async throws -> Bool {
        guard let lastSeen = try await sql.raw("""
            SELECT last_seen_at FROM dashboard_user_sessions
            WHERE sid = \(bind: sid) AND user_id = \(bind: userId) AND ended_at IS NULL
            """).first(decodingColumn: "last_seen_at", as: Int64.self), lastSeen > idleSince else { return false }
        if lastSeen < now - 60 {
            try await write { db in
                try await db.raw("UPDATE dashboard_user_sessions SET last_seen_at = \(bind: now) WHERE sid = \(bind: sid)").run()
            }
        }
        return true
    }

    /// The user's live sessions, most recently seen first.
    func userSessions(userId: String, idleSince: Int64) async throws -> [UserSession] {
        try await sql.raw("""
            SELECT sid, user_id, created_at, last_seen_at, address, user_agent FROM dashboard_user_sessions
            WHERE user_id = \(bind: userId) AND ended_at IS NULL AND last_seen_at > \(bind: idleSince)
            ORDER BY last_seen_at DESC LIMIT 100
            """).all(decoding: UserSession.self)
    }

    /// Ends one of the user's sessions (audited); false when it is not theirs or already ended.
    func endUserSession(sid: String, userId: String, now: Int64, actor: AuditActor) async throws -> Bool {
        try await write { db in
            guard try await db.raw("""
                UPDATE dashboard_user_sessions SET ended_at = \(bind: now)
                WHERE sid = \(bind: sid) AND user_id = \(bind: userId) AND ended_at IS NULL RETURNING sid
                """).first() != nil else { return false }
            try await Self.audit(db, at: now, actor: actor, action: "session.end", tenantId: nil, target: String(sid.prefix(8)))
            return true
        }
    }

    /// Ends every session of the user (sign-out everywhere, a second-factor reset).
    static func endAllUserSessions(_ db: any SQLDatabase, userId: String, now: Int64) async throws {
        try await db.raw("UPDATE dashboard_user_sessions SET ended_at = \(bind: now) WHERE user_id = \(bind: userId) AND ended_at IS NULL").run()
    }

    /// Forgets sessions ended or idle before `before` (housekeeping).
    func purgeUserSessions(before: Int64) async throws {
        try await write { db in
            try await db.raw("""
                DELETE FROM dashboard_user_sessions WHERE last_seen_at < \(bind: before) OR (ended_at IS NOT NULL AND ended_at < \(bind: before))
                """).run()
        }
    }
}
