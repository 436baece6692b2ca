import Crypto
import Foundation
import Hummingbird
import HTTPTypes
import KeylightCore
import KeylightSigning
import NIOCore

/// Turns `Authorization: Bearer <token>` into the request's ``Principal``: the owner's token, or
/// a named token that is neither revoked nor expired (read from the database on every request).
struct AdminAuthMiddleware: RouterMiddleware {
    typealias Context = KeylightRequestContext
    let service: AdminService

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization], header.utf8.count <= 512, let token = bearerToken(header),
              let principal = try await service.principal(
                  bearer: token, address: context.client.map { "\($0)" }, userAgent: request.headers[.userAgent]
              ) else { throw APIError.unauthorized }
        var context = context
        context.principal = principal
        return try await next(request, context)
    }
}

/// `/admin/v1/…` (protocol section 4), plus listing additions documented in the README.
struct AdminRoutes {
    let service: AdminService
    let limits: ServerLimits
    let table: RouteTable
    /// Artifacts, update settings and feeds (issue 51); nil in routers built without them.
    var releases: ReleaseService? = nil

    /// The product and the checked insights query of an insights request.
    private func insightsQuery(_ request: Request, _ context: KeylightRequestContext, extra: Set<String>) async throws -> (Product, InsightsQuery) {
        let product = try await service.requireProduct(tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"))
        return (product, try InsightsQuery(request: request, today: service.insights.today, extra: extra))
    }

    func register(on router: some RouterMethods<KeylightRequestContext>) {
        let group = router.group("/admin/v1").add(middleware: AdminAuthMiddleware(service: service))
        let admin = AdminRouter(group: group, limits: limits, idempotency: IdempotencyKeys(database: service.database, sealer: service.sealer, clock: service.clock), service: service, table: table)

        admin.post("/tenants", .tenantsCreate, body: CreateTenantRequest.self) { body, _, context in
            let tenant = try await service.createTenant(body, actor: context.actor)
            return try JSONBody.response(TenantBody(id: tenant.id, name: tenant.name), status: .created)
        }
        admin.get("/tenants", .tenantsRead) { _, context in
            try JSONBody.response(["tenants": try await service.visibleTenants(try context.requirePrincipal()).map { TenantBody(id: $0.id, name: $0.name) }])
        }
        admin.post("/tenants/:tenant/products", .productsWrite, body: CreateProductRequest.self) { body, _, context in
            let (product, sdkKey) = try await service.createProduct(tenantId: try context.parameters.require("tenant"), body, actor: context.actor)
            return try JSONBody.response(ProductBody(product, sdkKey: sdkKey), status: .created)
        }
        admin.get("/tenants/:tenant/products", .productsRead) { _, context in
            let tenant = try await service.requireTenant(try context.parameters.require("tenant"))
            return try JSONBody.response(["products": try await service.products(tenantId: tenant.id).map { ProductBody($0) }])
        }
        let releases = self.releases
        admin.get("/tenants/:tenant/products/:product", .productsRead) { _, context in
            let product = try await service.requireProduct(tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"))
            return try JSONBody.response(ProductBody(product, updates: try await releases?.updateSettings(tenantId: product.tenantId, productId: product.id)))
        }
        admin.patch("/tenants/:tenant/products/:product", .productsWrite, body: UpdateProductRequest.self) { body, _, context in
            let (tenantId, productId) = (try context.parameters.require("tenant"), try context.parameters.require("product"))
            let principal = try context.requirePrincipal()
            // Which key signs updates decides what every buyer's app installs.
            if body.sparkle_public_key != nil { try service.authorize(principal, .releasesPublish, tenantId: tenantId, productId: productId) }
            if case .some(.some(let key)) = body.sparkle_public_key { _ = try ReleaseService.sparklePublicKey(key) }
            let product = try await service.updateProduct(tenantId: tenantId, productId: productId, body, by: principal)
            let updates = if body.public_feed != nil || body.sparkle_public_key != nil {
                try await releases?.changeUpdateSettings(
                    tenantId: tenantId, productId: productId, publicFeed: body.public_feed, sparklePublicKey: body.sparkle_public_key, actor: principal.actor
                )
            } else {
                try await releases?.updateSettings(tenantId: tenantId, productId: productId)
            }
            return try JSONBody.response(ProductBody(product, updates: updates))
        }
        admin.post("/tenants/:tenant/products/:product/key-types", .productsWrite, body: CreateKeyTypeRequest.self) { body, _, context in
            let keyType = try await service.createKeyType(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                body, by: try context.requirePrincipal()
            )
            return try JSONBody.response(KeyTypeBody(keyType), status: .created)
        }
        admin.get("/tenants/:tenant/products/:product/key-types", .productsRead) { _, context in
            let product = try await service.requireProduct(tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"))
            return try JSONBody.response(["key_types": try await service.keyTypes(tenantId: product.tenantId, productId: product.id).map(KeyTypeBody.init)])
        }
        admin.post("/tenants/:tenant/products/:product/licenses", .licensesWrite, body: CreateLicenseRequest.self) { body, _, context in
            let (license, key) = try await service.createLicense(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                body, actor: context.actor
            )
            return try JSONBody.response(try await service.licenseBody(license, licenseKey: key.text), status: .created)
        }
        admin.get("/tenants/:tenant/products/:product/insights", .insightsRead) { request, context in
            let (product, query) = try await insightsQuery(request, context, extra: [])
            return try JSONBody.response(InsightsBody(try await service.insights.report(tenantId: product.tenantId, productId: product.id, query: query)))
        }
        admin.get("/tenants/:tenant/products/:product/insights.csv", .insightsRead) { request, context in
            let table = try InsightsCSV(query: request.uri.queryParameters.get("table"))
            let (product, query) = try await insightsQuery(request, context, extra: ["table"])
            return table.response(try await service.insights.report(tenantId: product.tenantId, productId: product.id, query: query), tenantId: product.tenantId, productId: product.id)
        }
        admin.get("/tenants/:tenant/products/:product/licenses", .licensesRead) { request, context in
            let query = request.uri.queryParameters
            let (tenant, product) = (try context.parameters.require("tenant"), try context.parameters.require("product"))
            let (licenses, next) = try await service.licensePage(
                tenantId: tenant, productId: product,
                try LicenseQuery(reading: { query.get($0) }, parameters: query.map { (String($0.key), String($0.value)) })
            )
            return try JSONBody.response(LicensePage(licenses: try await service.licenseBodies(licenses, tenantId: tenant, productId: product), next_cursor: next))
        }
        admin.get("/tenants/:tenant/products/:product/licenses/:id", .licensesRead) { _, context in
            let license = try await service.license(tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"), id: try context.parameters.require("id"))
            let instances = try await service.instances(licenseId: license.id)
            return try JSONBody.response(try await service.licenseBody(license, instances: instances))
        }
        admin.patch("/tenants/:tenant/products/:product/licenses/:id", .licensesWrite, body: UpdateLicenseRequest.self) { body, _, context in
            let license = try await service.editLicense(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                id: try context.parameters.require("id"), try body.edit(), actor: context.actor
            )
            return try JSONBody.response(try await service.licenseBody(license))
        }
        admin.post("/tenants/:tenant/products/:product/licenses/bulk", .licensesWrite, body: BulkLicenseRequest.self) { body, _, context in
            switch try await service.bulkJobs.create(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"), body, actor: context.actor, admin: service
            ) {
            case .dryRun(let answer): return try JSONBody.response(answer)
            case .job(let job): return try JSONBody.response(job, status: .accepted)
            }
        }
        admin.get("/tenants/:tenant/products/:product/licenses/bulk/:job", .licensesRead) { _, context in
            try JSONBody.response(try await service.bulkJobs.status(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"), id: try context.parameters.require("job")
            ))
        }
        admin.post("/tenants/:tenant/products/:product/licenses/:id/renew", .licensesWrite, body: RenewLicenseRequest.self) { body, _, context in
            var edit = LicenseEdit()
            edit.renewal = try body.renewal()
            let license = try await service.editLicense(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                id: try context.parameters.require("id"), edit, actor: context.actor
            )
            return try JSONBody.response(try await service.licenseBody(license))
        }
        for (action, status) in [("revoke", LicenseStatus.revoked), ("suspend", .suspended), ("reinstate", .active)] {
            admin.post("/tenants/:tenant/products/:product/licenses/:id/\(action)", .licensesWrite) { _, context in
                let license = try await service.setStatus(
                    tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                    id: try context.parameters.require("id"), to: status, action: "license.\(action)", actor: context.actor
                )
                return try JSONBody.response(try await service.licenseBody(license))
            }
        }
        admin.post("/tenants/:tenant/products/:product/licenses/:id/remint", .licensesRemint) { _, context in
            let (license, key) = try await service.remint(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                id: try context.parameters.require("id"), actor: context.actor
            )
            return try JSONBody.response(try await service.licenseBody(license, licenseKey: key.text))
        }
        admin.post("/tenants/:tenant/products/:product/licenses/:id/email", .licensesMail, optionalBody: ResendEmailRequest.self) { body, _, context in
            // The body is optional: none (or `{}`) mails the address on file.
            let (license, to) = try await service.resendEmail(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                id: try context.parameters.require("id"), body ?? ResendEmailRequest(), by: try context.requirePrincipal()
            )
            return try JSONBody.response(ResendEmailBody(queued: true, license_id: license.id, to: to), status: .accepted)
        }
        admin.post("/tenants/:tenant/products/:product/licenses/:id/instances/:instance/deactivate", .seatsFree) { _, context in
            try await service.deactivateInstance(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                licenseId: try context.parameters.require("id"), instanceId: try context.parameters.require("instance"), actor: context.actor
            )
            return try JSONBody.response(["deactivated": true])
        }
        admin.get("/tenants/:tenant/mail", .mailSettingsRead) { _, context in
            try JSONBody.response(MailSettingsBody(try await service.mailSettings(tenantId: try context.parameters.require("tenant"))))
        }
        admin.put("/tenants/:tenant/mail", .mailSettingsWrite, body: MailSettings.self) { body, _, context in
            let settings = try await service.setMailSettings(tenantId: try context.parameters.require("tenant"), body, actor: context.actor)
            return try JSONBody.response(MailSettingsBody(settings))
        }
        admin.post("/tenants/:tenant/mail/preview", .mailSettingsRead, optionalBody: MailSettings.self) { body, _, context in
            // No body previews the stored settings; a body previews those settings unsaved.
            return try JSONBody.response(try await service.previewMail(tenantId: try context.parameters.require("tenant"), body))
        }
        admin.get("/tenants/:tenant/reminders", .mailSettingsRead) { _, context in
            try JSONBody.response(ReminderSettingsBody(try await service.reminderSettings(tenantId: try context.parameters.require("tenant"))))
        }
        admin.put("/tenants/:tenant/reminders", .mailSettingsWrite, body: ReminderSettingsRequest.self) { body, _, context in
            let settings = try await service.setReminderSettings(tenantId: try context.parameters.require("tenant"), body, actor: context.actor)
            return try JSONBody.response(ReminderSettingsBody(settings))
        }
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
        admin.patch("/tenants/:tenant/products/:product/key-types/:id", .paymentsWrite, body: UpdateKeyTypeRequest.self) { body, _, context in
            let keyType = try await service.updateKeyType(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                id: try context.parameters.require("id"), body, actor: context.actor
            )
            return try JSONBody.response(KeyTypeBody(keyType))
        }
        admin.put("/tenants/:tenant/products/:product/key-types/:id/offers", .paymentsWrite, body: KeyTypeOffersRequest.self) { body, _, context in
            try JSONBody.response(try await service.setOffers(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                keyTypeId: try context.parameters.require("id"), body, actor: context.actor
            ))
        }
        admin.get("/tenants/:tenant/products/:product/key-types/:id/offers", .productsRead) { _, context in
            try JSONBody.response(try await service.offers(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"), keyTypeId: try context.parameters.require("id")
            ))
        }
        admin.post("/tenants/:tenant/checkout-key", .paymentsWrite) { _, context in
            let key = try await service.rotateCheckoutKey(tenantId: try context.parameters.require("tenant"), actor: context.actor)
            return try JSONBody.response(["checkout_key": key], status: .created)
        }
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
        // Protocol 6.2: each tenant's keys.
        admin.post("/tenants/:tenant/signing-keys/prepare", .signingKeysRotate) { _, context in
            let row = try await service.prepareSigningKey(tenantId: try context.parameters.require("tenant"), actor: context.actor)
            return try JSONBody.response(SigningKeyBody(kid: row.kid, public_key: row.publicKey, status: row.status.rawValue), status: .created)
        }
        admin.post("/tenants/:tenant/signing-keys/rotate", .signingKeysRotate, optionalBody: RotateSigningKeysRequest.self) { body, _, context in
            let rotated = try await service.rotateSigningKeys(tenantId: try context.parameters.require("tenant"), body, actor: context.actor)[0]
            return try JSONBody.response(SigningKeyBody(kid: rotated.kid, public_key: rotated.publicKey), status: .created)
        }
        admin.post("/tenants/:tenant/signing-keys/:kid/retire", .signingKeysRotate) { _, context in
            let kid = try context.parameters.require("kid")
            try await service.retireSigningKey(kid: kid, tenantId: try context.parameters.require("tenant"), actor: context.actor)
            return try JSONBody.response(["kid": kid, "status": "retired"])
        }
        admin.get("/tenants/:tenant/signing-keys", .signingKeysRead) { _, context in
            let tenant = try await service.requireTenant(try context.parameters.require("tenant"))
            let rows = try await service.signingKeyRows(tenantId: tenant.id)
            return try JSONBody.response(["keys": rows.map { SigningKeyBody(kid: $0.kid, public_key: $0.publicKey, status: $0.status.rawValue, created_at: $0.createdAt) }])
        }
        // Protocol 4 and 6.2: the server-wide routes act on every tenant at once.
        admin.post("/signing-keys/rotate", .signingKeysRotateAll, optionalBody: RotateSigningKeysRequest.self) { body, _, context in
            let outcomes = try await service.rotateSigningKeys(tenantId: nil, body, actor: context.actor)
            return try JSONBody.response(ServerRotationBody(
                kid: outcomes[0].kid, public_key: outcomes[0].publicKey,
                tenants: outcomes.map { .init(tenant_id: $0.tenantId, kid: $0.kid, public_key: $0.publicKey, prepared: $0.promotedNext) }
            ), status: .created)
        }
        admin.post("/signing-keys/:kid/retire", .signingKeysRotateAll) { _, context in
            let kid = try context.parameters.require("kid")
            try await service.retireSigningKey(kid: kid, tenantId: nil, actor: context.actor)
            return try JSONBody.response(["kid": kid, "status": "retired"])
        }
        admin.get("/signing-keys", .signingKeysRead) { _, context in
            let visible = try context.requirePrincipal().tenants(with: .signingKeysRead)
            let rows = try await service.signingKeyRows().filter { visible.contains($0.tenantId) }
            return try JSONBody.response(["keys": rows.map {
                SigningKeyBody(kid: $0.kid, public_key: $0.publicKey, status: $0.status.rawValue, created_at: $0.createdAt, tenant_id: $0.tenantId)
            }])
        }
        registerReleases(on: admin)
        // Team access (issue 50): named tokens, scoped and expiring.
        admin.post("/tokens", .tokensManage, body: CreateTokenRequest.self) { body, _, context in
            let (record, token) = try await service.createToken(body, by: try context.requirePrincipal())
            return try JSONBody.response(TokenBody(record, token: token), status: .created)
        }
        admin.get("/tokens", .tokensManage) { request, context in
            let tenant = request.uri.queryParameters.get("tenant").flatMap { $0.isEmpty ? nil : String($0) }
            return try JSONBody.response(["tokens": try await service.tokens(visibleTo: try context.requirePrincipal(), tenantId: tenant).map { TokenBody($0) }])
        }
        admin.delete("/tokens/:id", .tokensManage) { _, context in
            try await service.revokeToken(id: try context.parameters.require("id"), by: try context.requirePrincipal())
            return Response(status: .noContent)
        }
        admin.get("/audit-log", .auditRead) { request, context in
            let query = request.uri.queryParameters
            let limit = try Self.pageLimit(query.get("limit"), default: 100)
            let before = try query.get("cursor").flatMap { $0.isEmpty ? nil : $0 }.map { text -> Int64 in
                guard let value = Int64(text) else { throw APIError.invalidRequest("cursor is not one this server issued.") }
                return value
            }
            let principal = try context.requirePrincipal()
            var filter = try AuditFilter(principal: principal, reading: { query.get($0) })
            if let tenant = filter.tenantId { try service.authorize(principal, .auditRead, tenantId: tenant, productId: nil) }
            filter.tenants = principal.tenants(with: .auditRead)
            let entries = try await service.auditLog(filter, limit: limit + 1, beforeId: before)
            let page = Array(entries.prefix(limit))
            return try JSONBody.response(AuditPage(entries: page.map(AuditEntryBody.init), next_cursor: entries.count > limit ? page.last.map { String($0.id) } : nil))
        }
    }

    /// `limit=` of a listing: 1-500, `default` when absent or empty.
    static func pageLimit(_ text: String?, default value: Int) throws(APIError) -> Int {
        guard let text, !text.isEmpty else { return value }
        guard let limit = Int(text), (1...500).contains(limit) else { throw .invalidRequest("limit must be 1-500.") }
        return limit
    }
}
