import SQLKit

/// An invitation to join a tenant's team with a role. Its token is kept as a hash; the token
/// itself is sealed under the master key for its mail, and dropped when the invitation is used.
struct TeamInvitation: Codable, Sendable, Hashable {
    var id: String
    var tenantId: String
    var email: String
    var role: String
    var invitedBy: String
    /// The inviting user's id.
    var invitedById: String?
    var createdAt: Int64
    var expiresAt: Int64
    var acceptedAt: Int64?
    var revokedAt: Int64?

    enum CodingKeys: String, CodingKey {
        case id, email, role
        case tenantId = "tenant_id", invitedBy = "invited_by", invitedById = "invited_by_id", createdAt = "created_at", expiresAt = "expires_at"
        case acceptedAt = "accepted_at", revokedAt = "revoked_at"
    }
}

extension Database {
    static let invitationColumns: SQLQueryString = "id, tenant_id, email, role, invited_by, invited_by_id, created_at, expires_at, accepted_at, revoked_at"

    /// Records an invitation and queues its mail (when the server mails), in one transaction.
    func createInvitation(_ invitation: TeamInvitation, tokenHash: String, sealedToken: String, mail: Bool, actor: AuditActor) async throws {
        try await write { db in
            try await db.raw("""
                INSERT INTO team_invitations (id, token_hash, tenant_id, email, role, sealed_token, invited_by, invited_by_id, created_at, expires_at)
                VALUES (\(bind: invitation.id), \(bind: tokenHash), \(bind: invitation.tenantId), \(bind: invitation.email), \(bind: invitation.role),
                        \(bind: sealedToken), \(bind: invitation.invitedBy), \(bind: invitation.invitedById), \(bind: invitation.createdAt), \(bind: invitation.expiresAt))
                """).run()
            if mail {
                try await Self.enqueueMail(db, tenantId: invitation.tenantId, kind: .teamInvitation, licenseId: invitation.id, to: invitation.email, at: invitation.createdAt)
            }
            try await Self.audit(db, at: invitation.createdAt, actor: actor, action: "member.invite", tenantId: invitation.tenantId, target: invitation.email, details: [
                "role": invitation.role, "invitation_id": invitation.id, "expires_at": String(invitation.expiresAt),
            ])
        }
    }

    func invitations(tenantId: String, now: Int64) async throws -> [TeamInvitation] {
        try await sql.raw("""
            SELECT \(Self.invitationColumns) FROM team_invitations
            WHERE tenant_id = \(bind: tenantId) AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > \(bind: now)
            ORDER BY created_at DESC LIMIT 200
            """).all(decoding: TeamInvitation.self)
    }

    /// The open invitation a token names, or nil (unknown, used, revoked or expired).
    func invitation(tokenHash: String, now: Int64) async throws -> TeamInvitation? {
        try await sql.raw("""
            SELECT \(Self.invitationColumns) FROM team_invitations
            WHERE token_hash = \(bind: tokenHash) AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > \(bind: now)
            """).first(decoding: TeamInvitation.self)
    }

    /// The sealed token of an invitation still open (for its mail).
    func invitationSealedToken(id: String, now: Int64) async throws -> String? {
        try await sql.raw("""
            SELECT sealed_token FROM team_invitations
            WHERE id = \(bind: id) AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > \(bind: now)
            """).first(decodingColumn: "sealed_token", as: String?.self).flatMap { $0 }
    }

    /// Accepts an invitation once: the membership and the audit entry, in one transaction. A
    /// user who already has a role in the tenant keeps it (an invitation never changes a role;
    /// the team page does). nil when the invitation was used, revoked or expired meanwhile.
    func acceptInvitation(tokenHash: String, userId: String, now: Int64, actor: AuditActor) async throws -> TeamInvitation? {
        try await write { db in
            guard let invitation = try await db.raw("""
                UPDATE team_invitations SET accepted_at = \(bind: now), sealed_token = NULL
                WHERE token_hash = \(bind: tokenHash) AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > \(bind: now)
                RETURNING \(Self.invitationColumns)
                """).first(decoding: TeamInvitation.self) else { return nil }
            try await db.raw("""
                INSERT INTO team_memberships (user_id, tenant_id, role, created_at)
                VALUES (\(bind: userId), \(bind: invitation.tenantId), \(bind: invitation.role), \(bind: now))
                ON CONFLICT (user_id, tenant_id) DO NOTHING
                """).run()
            try await Self.audit(db, at: now, actor: actor, action: "member.join", tenantId: invitation.tenantId, target: invitation.email, details: [
                "role": invitation.role, "invitation_id": invitation.id,
            ])
            return invitation
        }
    }

    func revokeInvitation(id: String, tenantId: String, now: Int64, actor: AuditActor) async throws -> Bool {
        try await write { db in
            guard let email = try await db.raw("""
                UPDATE team_invitations SET revoked_at = \(bind: now), sealed_token = NULL
                WHERE id = \(bind: id) AND tenant_id = \(bind: tenantId) AND accepted_at IS NULL AND revoked_at IS NULL
                RETURNING email
                """).first(decodingColumn: "email", as: String.self) else { return false }
            try await Self.audit(db, at: now, actor: actor, action: "member.invite_revoke", tenantId: tenantId, target: email, details: ["invitation_id": id])
            return true
        }
    }

    /// Inside a change: withdraws the open invitations a user sent (in one tenant, or all for nil).
    static func withdrawInvitations(_ db: any SQLDatabase, sentBy userId: String, tenantId: String?, now: Int64) async throws {
        var query: SQLQueryString = """
            UPDATE team_invitations SET revoked_at = \(bind: now), sealed_token = NULL
            WHERE invited_by_id = \(bind: userId) AND accepted_at IS NULL AND revoked_at IS NULL
            """
        if let tenantId { query += " AND tenant_id = \(bind: tenantId)" }
        try await db.raw(query).run()
    }

    /// Drops the sealed token of invitations that expired (their links can no longer work), and
    /// forgets invitations closed before `closedBefore`.
    func purgeInvitations(now: Int64, closedBefore: Int64) async throws {
        try await write { db in
            try await db.raw("UPDATE team_invitations SET sealed_token = NULL WHERE expires_at <= \(bind: now) AND sealed_token IS NOT NULL").run()
            try await db.raw("""
                DELETE FROM team_invitations WHERE expires_at < \(bind: closedBefore) OR accepted_at < \(bind: closedBefore) OR revoked_at < \(bind: closedBefore)
                """).run()
        }
    }
}
