import Hummingbird

/// Outbound webhooks: endpoints and their deliveries.
extension AdminRoutes {
    /// Endpoints (create, list, enable, delete), their deliveries and redelivery.
    func registerWebhooks(on admin: AdminRouter) {
        admin.post("/tenants/:tenant/webhooks", .webhooksWrite, body: CreateWebhookEndpointRequest.self) { body, _, context in
            let (endpoint, secret) = try await service.createWebhookEndpoint(tenantId: try context.parameters.require("tenant"), body, actor: context.actor)
            return try JSONBody.response(WebhookEndpointBody(endpoint, secret: secret), status: .created)
        }
        admin.get("/tenants/:tenant/webhooks", .webhooksRead) { _, context in
            let tenant = try await service.requireTenant(try context.parameters.require("tenant"))
            return try JSONBody.response(["endpoints": try await service.webhookEndpoints(tenantId: tenant.id).map { WebhookEndpointBody($0) }])
        }
        admin.patch("/tenants/:tenant/webhooks/:id", .webhooksWrite, body: UpdateWebhookEndpointRequest.self) { body, _, context in
            let endpoint = try await service.setWebhookEndpointEnabled(
                tenantId: try context.parameters.require("tenant"), id: try context.parameters.require("id"),
                body, actor: context.actor
            )
            return try JSONBody.response(WebhookEndpointBody(endpoint))
        }
        admin.delete("/tenants/:tenant/webhooks/:id", .webhooksWrite) { _, context in
            try await service.deleteWebhookEndpoint(tenantId: try context.parameters.require("tenant"), id: try context.parameters.require("id"), actor: context.actor)
            return Response(status: .noContent)
        }
        admin.get("/tenants/:tenant/webhooks/:id/deliveries", .webhooksRead) { request, context in
            let endpoint = try await service.webhookEndpoint(tenantId: try context.parameters.require("tenant"), id: try context.parameters.require("id"))
            let limit = try Self.pageLimit(request.uri.queryParameters.get("limit"), default: 50)
            let deliveries = try await service.webhookDeliveries(tenantId: endpoint.tenantId, endpointId: endpoint.id, limit: limit)
            return try JSONBody.response(["deliveries": deliveries.map(WebhookDeliveryBody.init)])
        }
        admin.post("/tenants/:tenant/webhooks/:id/deliveries/:delivery/redeliver", .webhooksWrite) { _, context in
            let delivery = try await service.redeliver(
                tenantId: try context.parameters.require("tenant"), endpointId: try context.parameters.require("id"),
                deliveryId: try context.parameters.require("delivery"), actor: context.actor
            )
            return try JSONBody.response(WebhookDeliveryBody(delivery), status: .accepted)
        }
    }
}
