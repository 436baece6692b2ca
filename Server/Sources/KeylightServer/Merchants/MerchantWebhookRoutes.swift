import Foundation
import HTTPTypes
import Hummingbird
import KeylightCore
import Logging

/// `POST /paddle/webhook/{tenant}`, `/lemonsqueezy/webhook/{tenant}`, `/polar/webhook/{tenant}`:
/// a signed event from the tenant's merchant of record. A bad or missing signature (or, where
/// the provider signs a time, one more than five minutes off) is 400 and changes nothing.
struct MerchantWebhookRoutes {
    let admin: AdminService

    func register(on router: some RouterMethods<KeylightRequestContext>) {
        for provider in MerchantProvider.allCases {
            router.post(RouterPath("/\(provider.rawValue)/webhook/:tenant")) { request, context in
                try await receive(provider, request: request, context: context)
            }
        }
    }

    func receive(_ provider: MerchantProvider, request: Request, context: KeylightRequestContext) async throws -> Response {
        let tenantId = context.parameters.get("tenant") ?? ""
        guard TenantPath.isValidId(tenantId), let settings = try await admin.storedMerchantSettings(tenantId: tenantId, provider: provider) else {
            throw APIError.notFound("\(provider.displayName) endpoint")
        }
        var request = request
        let body = Array(try await request.collectJSONBody(limit: StripeWebhookRoutes.maxBody).readableBytesView)
        let secret = String(decoding: try admin.sealer.open(settings.sealedWebhookSecret, context: provider.webhookSecretContext(tenantId: tenantId)), as: UTF8.self)
        let now = admin.clock.unixSeconds
        let headers = request.headers
        let header: (String) -> String? = { name in HTTPField.Name(name).flatMap { headers[$0] } }
        guard provider.isSigned(header, body: body, secret: secret, now: now) else {
            throw APIError.invalidRequest(provider.signatureRequirement)
        }
        guard let event = provider.read(body, deliveryId: header("webhook-id"), settings: settings) else {
            throw APIError.invalidRequest("Not a \(provider.displayName) event.")
        }
        let sealer = admin.sealer
        let outcome = try await admin.merchantEvents.apply(
            event, provider: provider, tenantId: tenantId, now: now,
            // Kept (sealed: it names the buyer) only while the event stays retryable.
            sealEvent: { try sealer.seal(Data(body), context: provider.eventContext(tenantId: tenantId, eventId: event.id)) }
        )
        if outcome == .unmapped {
            // 2xx all the same: every sale of the store comes here, mapped or not, and a
            // provider told to retry would retry for days. Kept, and retryable from the admin API.
            context.logger.notice("\(provider.displayName) purchase of nothing mapped to a key type", metadata: ["event": .string(event.id), "tenant": .string(tenantId)])
        }
        return try JSONBody.response(Received(outcome: outcome.rawValue))
    }
}
