import Foundation
import Hummingbird

/// A tenant's team: its members and their roles, invitations, whether a second factor is
/// required; and its API tokens. Every change goes through ``AdminService`` (which checks that
/// no one grants more than they hold, and keeps an owner), audited.
struct TeamController: Sendable {
    let dashboard: DashboardRoutes
    var admin: AdminService { dashboard.admin }
    var pages: DashboardPages { dashboard.pages }

    struct InviteForm: Decodable {
        @FormText var email: String?
        @FormText var role: String?
    }

    struct RoleForm: Decodable {
        @FormText var role: String?
    }

    struct TwoFactorForm: Decodable {
        @FormCheckbox var required: Bool
    }

    struct TokenForm: Decodable {
        @FormText var name: String?
        @FormText var role: String?
        @FormList var permissions: [String]
        @FormText var productId: String?
        @FormText var expiresInDays: String?
        enum CodingKeys: String, CodingKey {
            case name, role, permissions, productId = "product_id", expiresInDays = "expires_in_days"
        }
    }

    func register(on group: RouterGroup<DashboardContext>) {
        let team = group.signedIn("/t/:tenant/team", dashboard: dashboard, back: Self.teamPage)
        team.get(.usersManage) { _, context -> Response in
            pages.page("team", try await teamView(context))
        }
        team.post("/invite", .usersManage, form: InviteForm.self) { form, _, context -> Response in
            let (invitation, token, mailed) = try await admin.invite(
                tenantId: TenantsController.tenantId(context), email: form.email, role: form.role, by: try context.requireUser().principal
            )
            var view = try await teamView(context)
            view.newInvitation = NewInvitation(
                email: invitation.email, link: mailed ? nil : "\(dashboard.publicURL ?? "")/dashboard/invite/\(token)", mailed: mailed
            )
            return pages.page("team", view)
        }
        team.post("/invitations/:invitation/revoke", .usersManage) { _, context -> Response in
            try await admin.revokeInvitation(tenantId: TenantsController.tenantId(context), id: try context.parameters.require("invitation"), by: try context.requireUser().principal)
            pages.flash(context, "Invitation withdrawn.")
            return .redirect(to: Self.teamPage(context))
        }
        team.post("/members/:user/role", .usersManage, form: RoleForm.self) { form, _, context -> Response in
            try await admin.setMemberRole(
                tenantId: TenantsController.tenantId(context), userId: try context.parameters.require("user"), role: form.role, by: try context.requireUser().principal
            )
            pages.flash(context, "Role changed.")
            return .redirect(to: Self.teamPage(context))
        }
        team.post("/members/:user/remove", .usersManage) { _, context -> Response in
            try await admin.removeMember(tenantId: TenantsController.tenantId(context), userId: try context.parameters.require("user"), by: try context.requireUser().principal)
            pages.flash(context, "Member removed.")
            return .redirect(to: Self.teamPage(context))
        }
        team.post("/two-factor", .usersManage, form: TwoFactorForm.self) { form, _, context -> Response in
            try await admin.setRequireTwoFactor(tenantId: TenantsController.tenantId(context), form.required, by: try context.requireUser().principal)
            pages.flash(context, form.required ? "Every member now needs a second factor to sign in." : "A second factor is no longer required.")
            return .redirect(to: Self.teamPage(context))
        }

        let tokens = group.signedIn("/t/:tenant/tokens", dashboard: dashboard, back: Self.tokensPage)
        tokens.get(.tokensManage) { _, context -> Response in
            pages.page("tokens", try await tokensView(context))
        }
        tokens.post(.tokensManage, form: TokenForm.self) { form, _, context -> Response in
            let now = admin.clock.unixSeconds
            let days = try form.expiresInDays.map { text throws(APIError) -> Int64 in
                guard let days = Int64(text), (1...3_650).contains(days) else { throw .invalidRequest("Expires in: 1-3650 days, or blank for never.") }
                return days
            }
            let (record, token) = try await admin.createToken(CreateTokenRequest(
                name: form.name, tenant_id: .some(TenantsController.tenantId(context)), product_id: form.productId,
                permissions: form.role == nil ? form.permissions : nil, role: form.role, expires_at: days.map { now + $0 * 86_400 }
            ), by: try context.requireUser().principal)
            var view = try await tokensView(context)
            view.newToken = NewToken(name: record.name, token: token)
            return pages.page("tokens", view)
        }
        tokens.post("/:token/revoke", .tokensManage) { _, context -> Response in
            try await admin.revokeToken(id: try context.parameters.require("token"), by: try context.requireUser().principal)
            pages.flash(context, "Token revoked: it stops working at once.")
            return .redirect(to: Self.tokensPage(context))
        }
    }

    @Sendable static func teamPage(_ context: DashboardContext) -> String { TenantsController.tenantPage(context) + "/team" }
    @Sendable static func tokensPage(_ context: DashboardContext) -> String { TenantsController.tenantPage(context) + "/tokens" }

    private func teamView(_ context: DashboardContext) async throws -> TeamView {
        let tenant = try await admin.requireTenant(TenantsController.tenantId(context))
        let principal = try context.requireUser().principal
        // Least first: an invitation sent without a look at the list gives the least.
        let grantable = Role.allCases.reversed().filter { principal.mayGrant(AccessGrant(tenantId: tenant.id, role: $0)) }
        return TeamView(
            chrome: pages.chrome("Team · \(tenant.name)", context),
            tenant: tenant,
            members: try await admin.teamMembers(tenantId: tenant.id).map { member in
                TeamMemberRow(member, roles: grantable, isSelf: member.userId == (try? context.requireUser().id))
            },
            invitations: try await admin.openInvitations(tenantId: tenant.id).map(InvitationRow.init),
            roles: grantable.map { RoleOption(id: $0.rawValue, title: $0.title, selected: false) },
            requireTwoFactor: try await admin.tenantRequiresTwoFactor(tenantId: tenant.id),
            newInvitation: nil
        )
    }

    private func tokensView(_ context: DashboardContext) async throws -> TokensView {
        let tenant = try await admin.requireTenant(TenantsController.tenantId(context))
        let principal = try context.requireUser().principal
        return TokensView(
            chrome: pages.chrome("API tokens · \(tenant.name)", context),
            tenant: tenant,
            tokens: try await admin.tokens(visibleTo: principal, tenantId: tenant.id).map { TokenRow($0, now: admin.clock.unixSeconds) },
            roles: Role.allCases.reversed().filter { principal.mayGrant(AccessGrant(tenantId: tenant.id, role: $0)) }.map { RoleOption(id: $0.rawValue, title: $0.title, selected: false) },
            permissions: Permission.allCases.filter { !$0.isServerWide && principal.holds($0, tenantId: tenant.id) }.map { PermissionOption(name: $0.rawValue) },
            products: try await admin.products(tenantId: tenant.id).map { ProductOption(id: $0.id, name: $0.name) },
            newToken: nil
        )
    }
}
