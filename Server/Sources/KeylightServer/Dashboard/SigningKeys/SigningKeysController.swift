import Hummingbird

/// Every tenant's lease-signing keys: prepare the next key, rotate, retire; with the
/// `KeylightPublicKeys` each tenant's next app build must ship.
struct SigningKeysController: Sendable {
    let dashboard: DashboardRoutes
    var admin: AdminService { dashboard.admin }
    var pages: DashboardPages { dashboard.pages }
    static let page = "/dashboard/signing-keys"

    func register(on group: RouterGroup<DashboardContext>) {
        let all = group.signedIn("/signing-keys", dashboard: dashboard, back: { _ in Self.page })
        all.get(.signingKeysRead) { _, context -> Response in
            let snapshot = admin.keyRing.current
            let principal = try context.requireUser().principal
            let tenants = try await admin.visibleTenants(principal, .signingKeysRead).map { tenant in
                TenantSigningKeys(id: tenant.id, name: tenant.name, keys: snapshot[tenant.id], canRotate: principal.holds(.signingKeysRotate, tenantId: tenant.id))
            }
            return pages.page("signing_keys", SigningKeysView(
                chrome: pages.chrome("Signing keys", context, section: .signingKeys), tenants: tenants,
                canRotateAll: principal.holds(.signingKeysRotateAll, tenantId: nil)
            ))
        }
        all.post("/rotate", .signingKeysRotateAll) { _, context -> Response in
            let outcomes = try await admin.rotateSigningKeys(tenantId: nil, actor: try context.requireUser().actor)
            pages.flash(context, "Rotated \(outcomes.count) tenant(s); the previous keys stay trusted until you retire them.")
            return .redirect(to: Self.page)
        }
        all.post("/:kid/retire", .signingKeysRotateAll) { _, context -> Response in
            let kid = try context.parameters.require("kid")
            try await admin.retireSigningKey(kid: kid, tenantId: nil, actor: try context.requireUser().actor)
            pages.flash(context, "Key \(kid) retired; it has left the keysets.")
            return .redirect(to: Self.page)
        }

        let tenant = group.signedIn("/t/:tenant/signing-keys", dashboard: dashboard, back: { _ in Self.page })
        tenant.post("/prepare", .signingKeysRotate) { _, context -> Response in
            let row = try await admin.prepareSigningKey(tenantId: try context.parameters.require("tenant"), actor: try context.requireUser().actor)
            pages.flash(context, "Key \(row.kid) is published as next. Ship it in your app (its KeylightPublicKeys below), then rotate.")
            return .redirect(to: Self.page)
        }
        tenant.post("/rotate", .signingKeysRotate) { _, context -> Response in
            let rotated = try await admin.rotateSigningKeys(tenantId: try context.parameters.require("tenant"), actor: try context.requireUser().actor)[0]
            pages.flash(context, "Key \(rotated.kid) is active; the previous key stays trusted until you retire it.")
            return .redirect(to: Self.page)
        }
        tenant.post("/:kid/retire", .signingKeysRotate) { _, context -> Response in
            let kid = try context.parameters.require("kid")
            try await admin.retireSigningKey(kid: kid, tenantId: try context.parameters.require("tenant"), actor: try context.requireUser().actor)
            pages.flash(context, "Key \(kid) retired; it has left the keyset.")
            return .redirect(to: Self.page)
        }
    }
}
