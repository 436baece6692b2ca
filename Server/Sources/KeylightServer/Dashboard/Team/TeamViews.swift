// View models of `team.mustache` and `tokens.mustache`.

/// `team.mustache`.
struct TeamView: Sendable {
    var chrome: Chrome
    var tenant: Tenant
    var members: [TeamMemberRow]
    var invitations: [InvitationRow]
    /// The roles the user may give here.
    var roles: [RoleOption]
    var requireTwoFactor: Bool
    /// Shown once: the link of the invitation just made.
    var newInvitation: NewInvitation?
}

struct NewInvitation: Sendable {
    var email: String
    /// Shown only when the server does not mail it (who sends the mail holds the only copy).
    var link: String?
    var mailed: Bool
}

struct RoleOption: Sendable {
    var id: String
    var title: String
    var selected: Bool
}

struct TeamMemberRow: Sendable {
    var userId: String
    var email: String
    var role: String
    /// A member of every tenant (managed on the server, with the CLI).
    var everyTenant: Bool
    var twoFactor: Bool
    var lastLogin: String
    /// The roles this member can be given (their current one selected); empty when the user
    /// may not change this member.
    var roleOptions: [RoleOption]
    var canChange: Bool
    var isSelf: Bool

    init(_ member: TeamMember, roles: [Role], isSelf: Bool) {
        userId = member.userId
        email = member.email
        role = Role(rawValue: member.role)?.title ?? member.role
        everyTenant = member.tenantId == Membership.everyTenant
        twoFactor = member.twoFactor
        lastLogin = member.lastLoginAt.map(DashboardFormat.time) ?? "never"
        let current = Role(rawValue: member.role)
        canChange = !everyTenant && current.map(roles.contains) ?? false
        roleOptions = canChange ? roles.map { RoleOption(id: $0.rawValue, title: $0.title, selected: $0 == current) } : []
        self.isSelf = isSelf
    }
}

struct InvitationRow: Sendable {
    var id: String
    var email: String
    var role: String
    var invitedBy: String
    var expires: String

    init(_ invitation: TeamInvitation) {
        id = invitation.id
        email = invitation.email
        role = Role(rawValue: invitation.role)?.title ?? invitation.role
        invitedBy = invitation.invitedBy
        expires = DashboardFormat.time(invitation.expiresAt)
    }
}

/// `tokens.mustache`.
struct TokensView: Sendable {
    var chrome: Chrome
    var tenant: Tenant
    var tokens: [TokenRow]
    var roles: [RoleOption]
    var permissions: [PermissionOption]
    var products: [ProductOption]
    /// Shown once, right after it was made.
    var newToken: NewToken?
}

struct NewToken: Sendable {
    var name: String
    var token: String
}

struct PermissionOption: Sendable {
    var name: String
}

struct ProductOption: Sendable {
    var id: String
    var name: String
}

struct TokenRow: Sendable {
    var id: String
    var name: String
    var scope: String
    var grants: String
    var expires: String
    var lastUsed: String
    var state: String
    var live: Bool

    init(_ token: ApiTokenRecord, now: Int64) {
        id = token.id
        name = token.name
        scope = token.productId.map { "product \($0)" } ?? (token.tenantId == nil ? "every tenant" : "tenant")
        grants = token.role.map { "role \($0)" } ?? (token.permissions ?? "").replacingOccurrences(of: ",", with: ", ")
        expires = token.expiresAt.map(DashboardFormat.time) ?? "never"
        lastUsed = token.lastUsedAt.map { DashboardFormat.time($0) + (token.lastUsedAddress.map { " from \($0)" } ?? "") } ?? "never"
        live = token.isLive(at: now)
        state = token.revokedAt != nil ? "revoked" : (live ? "active" : "expired")
    }
}
