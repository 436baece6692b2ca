import Hummingbird

/// A tenant's webhook endpoints and their recent deliveries: a page of its own, so that a role
/// without `webhooks:read` (support) cannot open it at all.
struct WebhooksController: Sendable {
    let dashboard: DashboardRoutes
    var admin: AdminService { dashboard.admin }
    var pages: DashboardPages { dashboard.pages }

    struct EndpointForm: Decodable {
        @FormText var url: String?
        @FormList var events: [String]
    }

    func register(on group: RouterGroup<DashboardContext>) {
        let hooks = group.signedIn("/t/:tenant/webhooks", dashboard: dashboard, back: Self.page)
        hooks.get(.webhooksRead) { _, context -> Response in
            pages.page("webhooks", try await view(context))
        }
        hooks.post(.webhooksWrite, form: EndpointForm.self) { form, _, context -> Response in
            let (_, secret) = try await admin.createWebhookEndpoint(
                tenantId: TenantsController.tenantId(context), CreateWebhookEndpointRequest(url: form.url, events: form.events.isEmpty ? nil : form.events),
                actor: try context.requireUser().actor
            )
            var view = try await view(context)
            view.newEndpointSecret = secret
            return pages.page("webhooks", view)
        }
        hooks.post("/:endpoint/deliveries/:delivery/redeliver", .webhooksWrite) { _, context -> Response in
            let delivery = try await admin.redeliver(
                tenantId: TenantsController.tenantId(context), endpointId: try context.parameters.require("endpoint"),
                deliveryId: try context.parameters.require("delivery"), actor: try context.requireUser().actor
            )
            pages.flash(context, "Delivery \(delivery.id) scheduled.")
            return .redirect(to: Self.page(context))
        }
        hooks.post("/:endpoint/:action", .webhooksWrite) { _, context -> Response in
            let (tenantId, endpoint, actor) = (TenantsController.tenantId(context), try context.parameters.require("endpoint"), try context.requireUser().actor)
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
            return .redirect(to: Self.page(context))
        }
    }

    @Sendable static func page(_ context: DashboardContext) -> String {
        TenantsController.tenantPage(context) + "/webhooks"
    }

    private func view(_ context: DashboardContext) async throws -> WebhooksView {
        let tenant = try await admin.requireTenant(TenantsController.tenantId(context))
        let endpoints = try await admin.webhookEndpoints(tenantId: tenant.id)
        let urls = Dictionary(endpoints.map { ($0.id, $0.url) }, uniquingKeysWith: { first, _ in first })
        let deliveries = try await admin.webhookDeliveries(tenantId: tenant.id, limit: 20)
        return WebhooksView(
            chrome: pages.chrome("Webhooks · \(tenant.name)", context),
            tenant: tenant,
            canWrite: try context.requireUser().principal.holds(.webhooksWrite, tenantId: tenant.id),
            newEndpointSecret: nil,
            endpoints: endpoints.map(EndpointRow.init),
            deliveries: deliveries.map { DeliveryRow($0, endpointURL: urls[$0.endpointId] ?? $0.endpointId) },
            eventTypes: WebhookEventType.allCases.map { EventTypeOption(name: $0.rawValue) }
        )
    }
}
