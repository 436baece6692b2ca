import Hummingbird

/// The overview (every tenant and product, with charts) and a tenant's page: its products,
/// Stripe settings, checkout key, webhook endpoints and deliveries, and Stripe events waiting
/// for a product.
struct TenantsController: Sendable {
    let dashboard: DashboardRoutes
    var admin: AdminService { dashboard.admin }
    var pages: DashboardPages { dashboard.pages }

    struct CreateTenantForm: Decodable {
        @FormText var id: String?
        @FormText var name: String?
    }

    struct StripeForm: Decodable {
        @FormText var webhookSecret: String?
        @FormText var secretKey: String?
        @FormCheckbox var removeSecretKey: Bool
        enum CodingKeys: String, CodingKey {
            case webhookSecret = "webhook_secret", secretKey = "secret_key", removeSecretKey = "remove_secret_key"
        }
    }

    func register(on group: RouterGroup<DashboardContext>) {
        let overview = group.signedIn(dashboard: dashboard)
        overview.get(.tenantsRead) { _, context -> Response in
            let principal = try context.requireUser().principal
            return pages.page("home", HomeView(
                chrome: pages.chrome("Overview", context), tenants: try await tenantCards(principal),
                canCreateTenant: principal.holds(.tenantsCreate, tenantId: nil)
            ))
        }
        overview.post("/tenants", .tenantsCreate, form: CreateTenantForm.self) { form, _, context -> Response in
            let tenant = try await admin.createTenant(CreateTenantRequest(id: form.id, name: form.name), actor: try context.requireUser().actor)
            pages.flash(context, "Tenant \(tenant.name) created.")
            return .redirect(to: "/dashboard/t/\(tenant.id)")
        }

        let tenant = group.signedIn("/t/:tenant", dashboard: dashboard, back: Self.tenantPage)
        tenant.get(.tenantsRead) { _, context -> Response in
            pages.page("tenant", try await tenantView(try context.parameters.require("tenant"), context))
        }
        tenant.post("/stripe", .paymentsWrite, form: StripeForm.self) { form, _, context -> Response in
            // Blank fields keep what is stored; only the box removes the secret key.
            let secretKey: String?? = form.removeSecretKey ? .some(nil) : form.secretKey.map { .some($0) } ?? .none
            try await admin.setStripe(tenantId: Self.tenantId(context), StripeSettingsRequest(webhookSecret: form.webhookSecret, secretKey: secretKey), actor: try context.requireUser().actor)
            pages.flash(context, "Stripe settings saved.")
            return .redirect(to: Self.tenantPage(context))
        }
        tenant.post("/checkout-key", .paymentsWrite) { _, context -> Response in
            let key = try await admin.rotateCheckoutKey(tenantId: Self.tenantId(context), actor: try context.requireUser().actor)
            var view = try await tenantView(Self.tenantId(context), context)
            view.newCheckoutKey = key
            return pages.page("tenant", view)
        }
        tenant.post("/stripe/events/:event/retry", .paymentsWrite) { _, context -> Response in
            let outcome = try await admin.retryStripeEvent(tenantId: Self.tenantId(context), id: try context.parameters.require("event"), actor: try context.requireUser().actor)
            if outcome == .unknownProduct {
                pages.flash(context, error: "The event still names a product or key type this tenant does not have.")
            } else {
                pages.flash(context, "Stripe event applied: \(outcome.rawValue).")
            }
            return .redirect(to: Self.tenantPage(context))
        }
    }

    static func tenantId(_ context: DashboardContext) -> String {
        context.parameters.get("tenant") ?? ""
    }

    @Sendable static func tenantPage(_ context: DashboardContext) -> String {
        "/dashboard/t/\(tenantId(context))"
    }

    private func tenantCards(_ principal: Principal) async throws -> [TenantCard] {
        let now = admin.clock.unixSeconds
        var cards: [TenantCard] = []
        for tenant in try await admin.visibleTenants(principal) {
            var products: [ProductCard] = []
            for product in try await admin.products(tenantId: tenant.id) {
                let charts = try await ProductCharts.load(admin, tenantId: tenant.id, productId: product.id, now: now)
                // Use over time is insight: roles without `insights:read` see the license counts only.
                let insights = principal.holds(.insightsRead, tenantId: tenant.id, productId: product.id)
                products.append(ProductCard(
                    tenantId: tenant.id, id: product.id, name: product.name, keyPrefix: product.keyPrefix,
                    statusChart: charts.status, activationChart: insights ? charts.activations : "", validationChart: insights ? charts.validations : "",
                    total: charts.total
                ))
            }
            cards.append(TenantCard(id: tenant.id, name: tenant.name, products: products))
        }
        return cards
    }

    private func tenantView(_ tenantId: String, _ context: DashboardContext) async throws -> TenantView {
        let tenant = try await admin.requireTenant(tenantId)
        let access = TenantAccess(try context.requireUser().principal, tenantId: tenant.id)
        let stripe = try await admin.stripeSettings(tenantId: tenant.id)
        let endpointCount = access.webhooks ? try await admin.webhookEndpoints(tenantId: tenant.id).count : 0
        let unapplied = try await admin.unappliedStripeEvents(tenantId: tenant.id, limit: 20)
        var merchants: [MerchantCard] = []
        for provider in MerchantProvider.allCases {
            let configured = try await admin.storedMerchantSettings(tenantId: tenant.id, provider: provider) != nil
            merchants.append(MerchantCard(provider: provider.rawValue, name: provider.displayName, configured: configured))
        }
        return TenantView(
            chrome: pages.chrome(tenant.name, context),
            tenant: tenant,
            products: try await admin.products(tenantId: tenant.id).map(ProductRow.init),
            stripeConfigured: stripe != nil, stripeSecretKeySet: stripe?.sealedSecretKey != nil,
            merchants: merchants,
            checkoutKeySet: try await admin.checkoutKeySet(tenantId: tenant.id),
            newCheckoutKey: nil, endpointCount: endpointCount, access: access,
            unappliedStripeEvents: unapplied.map(PaymentEventRow.init),
            hasUnappliedStripeEvents: !unapplied.isEmpty
        )
    }
}
