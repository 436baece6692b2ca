import Hummingbird
import HTTPTypes
import KeylightCore
import NIOCore

/// `/<tenant>/<product>/<action>`: the public SDK API (protocol section 2).
struct SDKRoutes {
    let service: LicensingService
    let limits: ServerLimits
    /// Signs answers to requests with `X-Keylight-Nonce`; nil signs nothing.
    let signer: ResponseSigner?
    /// The per-address limit, inside the signing (a 429 is an SDK answer and is signed too).
    let addressLimit: AddressRateLimitMiddleware
    /// The lost-key mail, queued as the customer portal queues it (protocol 6.9).
    let admin: AdminService
    /// Shared with the portal's "Lost your key?": one budget per client and per recipient for both.
    let lostKeyLimits: LostKeyLimits
    /// App Store purchases exchanged for licenses.
    var appStore: AppStoreExchange? = nil

    /// A group for routes whose errors carry `outcomeField`.
    private func routes(on router: some RouterMethods<KeylightRequestContext>, outcomeField: String? = nil) -> RouterGroup<KeylightRequestContext> {
        router.group()
            .add(middleware: SDKResponseMiddleware(signer: signer, outcomeField: outcomeField))
            .add(middleware: addressLimit)
    }

    func register(on router: some RouterMethods<KeylightRequestContext>) {
        routes(on: router, outcomeField: "activated").post("/:tenant/:product/activate") { request, context in
            try await handle(request, context) { product, body in
                JSONBody.raw(try await service.activate(decodeBody(SDKBody<ActivateRequest>.self, from: body.readableBytesView), product: product).jsonBytes)
            }
        }
        if let appStore {
            routes(on: router, outcomeField: "activated").post("/:tenant/:product/appstore/activate") { request, context in
                try await handle(request, context) { product, body in
                    JSONBody.raw(try await appStore.activate(decodeBody(SDKBody<AppStoreActivateRequest>.self, from: body.readableBytesView), product: product).jsonBytes)
                }
            }
        }
        routes(on: router, outcomeField: "valid").post("/:tenant/:product/validate") { request, context in
            try await handle(request, context) { product, body in
                JSONBody.raw(try await service.validate(decodeBody(SDKBody<ValidateRequest>.self, from: body.readableBytesView), product: product).jsonBytes)
            }
        }
        let others = routes(on: router)
        others.post("/:tenant/:product/deactivate") { request, context in
            try await handle(request, context) { product, body in
                JSONBody.raw(try await service.deactivate(decodeBody(DeactivateRequest.self, from: body.readableBytesView), product: product).jsonBytes)
            }
        }
        others.post("/:tenant/:product/keyless") { request, context in
            try await handle(request, context) { product, body in
                JSONBody.raw(try await service.keyless(decodeBody(SDKBody<KeylessRequest>.self, from: body.readableBytesView), product: product).jsonBytes)
            }
        }
        // Protocol 6.3 and 6.4: seats, and activation of devices that cannot reach the server.
        others.post("/:tenant/:product/instances") { request, context in
            try await handle(request, context) { product, body in
                try JSONBody.response(try await service.instances(decodeBody(InstancesRequest.self, from: body.readableBytesView), product: product))
            }
        }
        others.post("/:tenant/:product/offline/activate") { request, context in
            try await handle(request, context) { product, body in
                try JSONBody.response(try await service.offlineActivate(decodeBody(OfflineActivateRequest.self, from: body.readableBytesView), product: product))
            }
        }
        others.post("/:tenant/:product/offline/deactivate") { request, context in
            try await handle(request, context) { product, body in
                JSONBody.raw(try await service.offlineDeactivate(decodeBody(OfflineDeactivateRequest.self, from: body.readableBytesView), product: product).jsonBytes)
            }
        }
        // Protocol 6.9: "Lost your key?" from the app, whatever the product's portal setting.
        others.post("/:tenant/:product/lost-key") { request, context in
            try await handle(request, context) { product, body in
                try await lostKey(body, product: product, client: context.rateLimitKey)
            }
        }
        others.get("/:tenant/:product/config") { request, context in
            try await handle(request, context, readsBody: false) { product, _ in
                JSONBody.raw(ConfigResponse(config: try await service.config(for: product, now: service.clock.unixSeconds)).jsonBytes)
            }
        }
    }

    /// Queues the lost-key mail for the address and answers 202 `{"received":true}` whether or not
    /// any license was bought with it: both take the same path (a mail is always queued; one for an
    /// address without licenses is dropped when it is due), so neither the answer nor its timing
    /// tells. The portal's checks, in its order: mail configured (422 `MAIL_NOT_CONFIGURED`), the
    /// per-client limit, the address (400), the per-recipient limit (429s with `Retry-After`).
    private func lostKey(_ body: ByteBuffer, product: Product, client: IPAddress) async throws -> Response {
        guard admin.mailBuyers else { throw APIError.lostKeyNeedsMail }
        if case .limited(let retryAfter) = lostKeyLimits.perClient.acquire(client) { throw APIError.rateLimited(retryAfter: retryAfter) }
        let email = try Field.lostKeyEmail(decodeBody(LostKeyRequest.self, from: body.readableBytesView).email)
        if case .limited(let retryAfter) = lostKeyLimits.perRecipient.acquire(email) { throw APIError.rateLimited(retryAfter: retryAfter) }
        try await admin.mailLostKeys(tenantId: product.tenantId, to: email)
        return JSONBody.raw(LostKeyResponse().jsonBytes, status: .accepted)
    }

    /// The steps every SDK action shares, in the order their errors take precedence: body size
    /// (413), SDK key and product (401/404), then the action. Errors are rendered by
    /// ``SDKResponseMiddleware``, which adds `"activated":false` / `"valid":false`.
    private func handle(
        _ request: Request, _ context: KeylightRequestContext, readsBody: Bool = true,
        _ action: (Product, ByteBuffer) async throws -> Response
    ) async throws -> Response {
        var request = request
        let body = readsBody ? try await request.collectJSONBody(limit: limits.maxBodyBytes) : ByteBuffer()
        let product = try await service.authorizedProduct(
            tenantId: context.parameters.get("tenant") ?? "",
            productId: context.parameters.get("product") ?? "",
            sdkKey: request.headers[.keylightSDKKey]
        )
        return try await action(product, body)
    }
}
