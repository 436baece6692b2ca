import Crypto
import Foundation
import KeylightCore

/// How invitations to a tenant's team work: a link mailed to the address, used once, for 7 days.
enum TeamInvitations {
    static let lifetime: Int64 = 7 * 86_400
    static func sealContext(id: String) -> String { "team-invitation|\(id)" }
    static func hash(_ token: String) -> String { Hex.encode(SHA256.hash(data: Data(("keylight-invitation:" + token).utf8))) }
    static func isWellFormed(_ token: String) -> Bool { AccountSignIn.isWellFormed(token) }
}

/// A tenant's team: members and their roles, invitations, the second-factor rule. Every change
/// is checked against what the acting principal holds (no one grants more than they hold) and
/// keeps an owner.
extension AdminService {
    func teamMembers(tenantId: String) async throws -> [TeamMember] {
        try await database.teamMembers(tenantId: tenantId)
    }

    func openInvitations(tenantId: String) async throws -> [TeamInvitation] {
        try await database.invitations(tenantId: tenantId, now: clock.unixSeconds)
    }

    /// Invites `email` to the tenant with `role`; answers the invitation and its link's token
    /// (shown to the inviter once, for a server that does not mail). Mailed through the outbox
    /// when the server mails and knows its public URL.
    func invite(tenantId: String, email rawEmail: String?, role rawRole: String?, by principal: Principal) async throws -> (TeamInvitation, token: String, mailed: Bool) {
        try authorize(principal, .usersManage, tenantId: tenantId, productId: nil)
        _ = try await requireTenant(tenantId)
        guard let email = try Field.email(rawEmail) else { throw APIError.invalidRequest("Give the address to invite.") }
        let role = try Role.parse(rawRole ?? "")
        guard principal.mayGrant(AccessGrant(tenantId: tenantId, role: role)) else { throw APIError.grantBeyondOwn }
        let now = clock.unixSeconds
        let token = String(AdminService.newSecret(prefix: "").prefix(43))
        let invitation = TeamInvitation(
            id: UUID().uuidString.lowercased(), tenantId: tenantId, email: email, role: role.rawValue,
            invitedBy: principal.actor.name, invitedById: principal.actor.id, createdAt: now, expiresAt: now + TeamInvitations.lifetime
        )
        let mailed = mailBuyers && publicURL != nil
        try await database.createInvitation(
            invitation, tokenHash: TeamInvitations.hash(token),
            sealedToken: try sealer.seal(Data(token.utf8), context: TeamInvitations.sealContext(id: invitation.id)),
            mail: mailed, actor: principal.actor
        )
        return (invitation, token, mailed)
    }

    /// The open invitation a link's token names; nil when unknown, used, revoked or expired.
    func invitation(token: String) async throws -> TeamInvitation? {
        guard TeamInvitations.isWellFormed(token) else { return nil }
        return try await database.invitation(tokenHash: TeamInvitations.hash(token), now: clock.unixSeconds)
    }

    /// Accepts an invitation for `user` (whose email must be the invited one).
    func acceptInvitation(token: String, user: DashboardUser, origin: RequestOrigin) async throws -> TeamInvitation? {
        guard let open = try await invitation(token: token), open.email == user.email else { return nil }
        let actor = AuditActor(name: "user:\(user.email)", kind: .user, id: user.id, address: origin.address, userAgent: origin.userAgent)
        return try await database.acceptInvitation(tokenHash: TeamInvitations.hash(token), userId: user.id, now: clock.unixSeconds, actor: actor)
    }

    func revokeInvitation(tenantId: String, id: String, by principal: Principal) async throws {
        try authorize(principal, .usersManage, tenantId: tenantId, productId: nil)
        guard try await database.revokeInvitation(id: id, tenantId: tenantId, now: clock.unixSeconds, actor: principal.actor) else {
            throw APIError.notFound("Invitation")
        }
    }

    /// Gives a member of the tenant another role. The principal must hold both the old role's
    /// and the new role's permissions there (a developer cannot demote an owner), and the tenant
    /// keeps an owner.
    func setMemberRole(tenantId: String, userId: String, role rawRole: String?, by principal: Principal) async throws {
        try authorize(principal, .usersManage, tenantId: tenantId, productId: nil)
        let role = try Role.parse(rawRole ?? "")
        let member = try await requireMember(tenantId: tenantId, userId: userId)
        let current = Role(rawValue: member.role)
        guard principal.mayGrant(AccessGrant(tenantId: tenantId, role: role)),
              current.map({ principal.mayGrant(AccessGrant(tenantId: tenantId, role: $0)) }) ?? true else { throw APIError.grantBeyondOwn }
        do {
            try await database.setMembership(userId: userId, email: member.email, tenantId: tenantId, role: role, now: clock.unixSeconds, actor: principal.actor)
        } catch TeamChangeError.lastOwner {
            throw APIError.lastOwner
        }
    }

    func removeMember(tenantId: String, userId: String, by principal: Principal) async throws {
        try authorize(principal, .usersManage, tenantId: tenantId, productId: nil)
        let member = try await requireMember(tenantId: tenantId, userId: userId)
        if let current = Role(rawValue: member.role), !principal.mayGrant(AccessGrant(tenantId: tenantId, role: current)) { throw APIError.grantBeyondOwn }
        do {
            try await database.removeMembership(userId: userId, email: member.email, tenantId: tenantId, now: clock.unixSeconds, actor: principal.actor)
        } catch TeamChangeError.lastOwner {
            throw APIError.lastOwner
        } catch TeamChangeError.notFound {
            throw APIError.notFound("Member")
        }
    }

    /// Whether every member of the tenant must sign in with a second factor; owners decide.
    func setRequireTwoFactor(tenantId: String, _ required: Bool, by principal: Principal) async throws {
        try authorize(principal, .usersManage, tenantId: tenantId, productId: nil)
        guard principal.holds(.usersManage, tenantId: tenantId), principal.grants.contains(where: { $0.reaches(tenant: tenantId) && $0.role == .owner }) else {
            throw APIError(status: .forbidden, code: "FORBIDDEN", message: "Only an owner of the tenant can require a second factor.")
        }
        try await database.setRequireTwoFactor(tenantId: tenantId, required, now: clock.unixSeconds, actor: principal.actor)
    }

    func tenantRequiresTwoFactor(tenantId: String) async throws -> Bool {
        try await database.tenantRequiresTwoFactor(tenantId: tenantId)
    }

    /// A membership in the tenant itself (members of every tenant are managed on the server).
    private func requireMember(tenantId: String, userId: String) async throws -> TeamMember {
        guard userId.utf8.count <= 64, let member = try await database.teamMembers(tenantId: tenantId).first(where: { $0.userId == userId && $0.tenantId == tenantId }) else {
            throw APIError.notFound("Member")
        }
        return member
    }
}

extension APIError {
    static let lastOwner = Self(
        status: .conflict, code: "LAST_OWNER",
        message: "That would leave no owner: make someone else an owner first."
    )
}
