import Hummingbird

/// Payments: the Stripe, Paddle, Lemon Squeezy and Polar settings of a tenant and their events.
extension AdminRoutes {
    /// Each provider's settings, its event log and retrying an event.
    func registerPayments(on admin: AdminRouter) {
        admin.put("/tenants/:tenant/stripe", .paymentsWrite, body: StripeSettingsRequest.self) { body, _, context in
            try await service.setStripe(tenantId: try context.parameters.require("tenant"), body, actor: context.actor)
            return try JSONBody.response(OKBody())
        }
        admin.get("/tenants/:tenant/stripe/events", .paymentsRead) { request, context in
            let limit = try Self.pageLimit(request.uri.queryParameters.get("limit"), default: 50)
            let events = try await service.stripeEvents(
                tenantId: try context.parameters.require("tenant"), outcome: request.uri.queryParameters.get("outcome").map { String($0) }, limit: limit
            )
            return try JSONBody.response(["events": events.map { PaymentEventBody(event: $0) }])
        }
        admin.post("/tenants/:tenant/stripe/events/:id/retry", .paymentsWrite) { _, context in
            let id = try context.parameters.require("id")
            let outcome = try await service.retryStripeEvent(tenantId: try context.parameters.require("tenant"), id: id, actor: context.actor)
            return try JSONBody.response(["id": id, "outcome": outcome.rawValue])
        }
        admin.put("/tenants/:tenant/paddle", .paymentsWrite, body: PaddleSettingsRequest.self) { body, _, context in
            let tenant = try context.parameters.require("tenant")
            let settings = try await service.setMerchantSettings(
                tenantId: tenant, provider: .paddle, webhookSecret: body.webhook_secret, apiKey: body.api_key, environment: body.environment, actor: context.actor
            )
            return try JSONBody.response(MerchantSettingsBody(settings, provider: .paddle, tenantId: tenant))
        }
        admin.put("/tenants/:tenant/lemonsqueezy", .paymentsWrite, body: LemonSqueezySettingsRequest.self) { body, _, context in
            let tenant = try context.parameters.require("tenant")
            let settings = try await service.setMerchantSettings(
                tenantId: tenant, provider: .lemonSqueezy, webhookSecret: body.webhook_secret, acceptTestMode: body.accept_test_mode, actor: context.actor
            )
            return try JSONBody.response(MerchantSettingsBody(settings, provider: .lemonSqueezy, tenantId: tenant))
        }
        admin.put("/tenants/:tenant/polar", .paymentsWrite, body: PolarSettingsRequest.self) { body, _, context in
            let tenant = try context.parameters.require("tenant")
            let settings = try await service.setMerchantSettings(tenantId: tenant, provider: .polar, webhookSecret: body.webhook_secret, actor: context.actor)
            return try JSONBody.response(MerchantSettingsBody(settings, provider: .polar, tenantId: tenant))
        }
        for provider in MerchantProvider.allCases {
            admin.get(RouterPath("/tenants/:tenant/\(provider.rawValue)"), .paymentsRead) { _, context in
                let tenant = try context.parameters.require("tenant")
                return try JSONBody.response(MerchantSettingsBody(try await service.merchantSettings(tenantId: tenant, provider: provider), provider: provider, tenantId: tenant))
            }
            admin.delete(RouterPath("/tenants/:tenant/\(provider.rawValue)"), .paymentsWrite) { _, context in
                try await service.deleteMerchantSettings(tenantId: try context.parameters.require("tenant"), provider: provider, actor: context.actor)
                return Response(status: .noContent)
            }
            admin.get(RouterPath("/tenants/:tenant/\(provider.rawValue)/events"), .paymentsRead) { request, context in
                let limit = try Self.pageLimit(request.uri.queryParameters.get("limit"), default: 50)
                // The list belongs to the provider's settings, as retrying does: once they are
                // deleted the API answers 404 (the dashboard still shows what is kept).
                _ = try await service.merchantSettings(tenantId: try context.parameters.require("tenant"), provider: provider)
                let events = try await service.merchantEvents(
                    tenantId: try context.parameters.require("tenant"), provider: provider,
                    outcome: request.uri.queryParameters.get("outcome").map { String($0) }, limit: limit
                )
                return try JSONBody.response(["events": events.map { PaymentEventBody(event: $0) }])
            }
            admin.post(RouterPath("/tenants/:tenant/\(provider.rawValue)/events/:id/retry"), .paymentsWrite) { _, context in
                let id = try context.parameters.require("id")
                let outcome = try await service.retryMerchantEvent(tenantId: try context.parameters.require("tenant"), provider: provider, id: id, actor: context.actor)
                return try JSONBody.response(["id": id, "outcome": outcome.rawValue])
            }
        }
    }
}
