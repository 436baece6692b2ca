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

    struct EndpointForm: Decodable {
        @FormText var url: String?
        @FormList var events: [String]
    }

    func register(on group: RouterGroup<DashboardContext>) {
        let overview = group.signedIn(dashboard: dashboard)
        overview.get { _, context -> Response in
            pages.page("home", HomeView(chrome: pages.chrome("Overview", context), tenants: try await tenantCards()))
        }
        overview.post("/tenants", form: CreateTenantForm.self) { form, _, context -> Response in
            let tenant = try await admin.createTenant(CreateTenantRequest(id: form.id, name: form.name), actor: try context.requireUser().actor)
            pages.flash(context, "Tenant \(tenant.name) created.")
            return .redirect(to: "/dashboard/t/\(tenant.id)")
        }

        let tenant = group.signedIn("/t/:tenant", dashboard: dashboard, back: Self.tenantPage)
        tenant.get { _, context -> Response in
            pages.page("tenant", try await tenantView(try context.parameters.require("tenant"), context))
        }
        tenant.post("/stripe", form: StripeForm.self) { form, _, context -> Response in
            // Blank fields keep what is stored; only the box removes the secret key.
            let secretKey: String?? = form.removeSecretKey ? .some(nil) : form.secretKey.map { .some($0) } ?? .none
            try await admin.setStripe(tenantId: Self.tenantId(context), StripeSettingsRequest(webhookSecret: form.webhookSecret, secretKey: secretKey), actor: try context.requireUser().actor)
            pages.flash(context, "Stripe settings saved.")
            return .redirect(to: Self.tenantPage(context))
        }
        tenant.post("/checkout-key") { _, context -> Response in
            let key = try await admin.rotateCheckoutKey(tenantId: Self.tenantId(context), actor: try context.requireUser().actor)
            var view = try await tenantView(Self.tenantId(context), context)
            view.newCheckoutKey = key
            return pages.page("tenant", view)
        }
        tenant.post("/webhooks", form: EndpointForm.self) { form, _, context -> Response in
            let (_, secret) = try await admin.createWebhookEndpoint(
                tenantId: Self.tenantId(context), CreateWebhookEndpointRequest(url: form.url, events: form.events.isEmpty ? nil : form.events),
                actor: try context.requireUser().actor
            )
            var view = try await tenantView(Self.tenantId(context), context)
            view.newEndpointSecret = secret
            return pages.page("tenant", view)
        }
        tenant.post("/webhooks/:endpoint/deliveries/:delivery/redeliver") { _, context -> Response in
            let delivery = try await admin.redeliver(
                tenantId: Self.tenantId(context), endpointId: try context.parameters.require("endpoint"),
                deliveryId: try context.parameters.require("delivery"), actor: try context.requireUser().actor
            )
            pages.flash(context, "Delivery \(delivery.id) scheduled.")
            return .redirect(to: Self.tenantPage(context))
        }
        tenant.post("/stripe/events/:event/retry") { _, context -> Response in
            let outcome = try await admin.retryStripeEvent(tenantId: Self.tenantId(context), id: try context.parameters.require("event"), actor: try context.requireUser().actor)
            if outcome == .unknownProduct {
                pages.flash(context, error: "The event still names a product or key type this tenant does not have.")
            } else {
                pages.flash(context, "Stripe event applied: \(outcome.rawValue).")
            }
            return .redirect(to: Self.tenantPage(context))
        }
        tenant.post("/webhooks/:endpoint/:action") { _, context -> Response in
            let (tenantId, endpoint, actor) = (Self.tenantId(context), try context.parameters.require("endpoint"), try context.requireUser().actor)
            switch try context.parameters.require("action") {
            case "enable", "disable":
                let enabled = context.parameters.get("action") == "enable"
                _ = try await admin.setWebhookEndpointEnabled(tenantId: tenantId, id: endpoint, UpdateWebhookEndpointRequest(enabled: enabled), actor: actor)
                pages.flash(context, enabled ? "Endpoint enabled." : "Endpoint disabled; its pending deliveries were stopped.")
            case "delete":
                try await admin.deleteWebhookEndpoint(tenantId: tenantId, id: endpoint, actor: actor)
                pages.flash(context, "Endpoint deleted.")
            default:
                throw APIError.notFound("Action")
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

    private func tenantCards() async throws -> [TenantCard] {
        let now = admin.clock.unixSeconds
        var cards: [TenantCard] = []
        for tenant in try await admin.tenants() {
            var products: [ProductCard] = []
            for product in try await admin.products(tenantId: tenant.id) {
                let charts = try await ProductCharts.load(admin, tenantId: tenant.id, productId: product.id, now: now)
                products.append(ProductCard(
                    tenantId: tenant.id, id: product.id, name: product.name, keyPrefix: product.keyPrefix,
                    statusChart: charts.status, activationChart: charts.activations, validationChart: charts.validations, total: charts.total
                ))
            }
            cards.append(TenantCard(id: tenant.id, name: tenant.name, products: products))
        }
        return cards
    }

    private func tenantView(_ tenantId: String, _ context: DashboardContext) async throws -> TenantView {
        let tenant = try await admin.requireTenant(tenantId)
        let stripe = try await admin.stripeSettings(tenantId: tenant.id)
        let endpoints = try await admin.webhookEndpoints(tenantId: tenant.id)
        let urls = Dictionary(endpoints.map { ($0.id, $0.url) }, uniquingKeysWith: { first, _ in first })
        let deliveries = try await admin.webhookDeliveries(tenantId: tenant.id, limit: 20)
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
            newCheckoutKey: nil, newEndpointSecret: nil,
            endpoints: endpoints.map(EndpointRow.init),
            deliveries: deliveries.map { DeliveryRow($0, endpointURL: urls[$0.endpointId] ?? $0.endpointId) },
            eventTypes: WebhookEventType.allCases.map { EventTypeOption(name: $0.rawValue) },
            unappliedStripeEvents: unapplied.map(PaymentEventRow.init),
            hasUnappliedStripeEvents: !unapplied.isEmpty
        )
    }
}
