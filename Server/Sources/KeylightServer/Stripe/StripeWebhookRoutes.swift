import Foundation
import Hummingbird
import KeylightCore
import KeylightSigning
import Logging
import NIOCore

/// `{"received":true,"outcome":…}`: any 2xx tells Stripe to stop retrying.
struct Received: Encodable {
    let received = true
    var outcome: String
}

/// `POST /stripe/webhook/{tenantId}` (protocol sections 5 and 6.6).
struct StripeWebhookRoutes {
    let admin: AdminService

    /// Stripe events can be larger than SDK bodies.
    static let maxBody = 512 * 1024

    func register(on router: some RouterMethods<KeylightRequestContext>) {
        router.post("/stripe/webhook/:tenant") { request, context in
            let tenantId = context.parameters.get("tenant") ?? ""
            guard TenantPath.isValidId(tenantId), let settings = try await admin.stripeSettings(tenantId: tenantId) else {
                throw APIError.notFound("Stripe endpoint")
            }
            var request = request
            let body = try await request.collectJSONBody(limit: Self.maxBody)
            let bytes = Array(body.readableBytesView)
            let secret = String(decoding: try admin.sealer.open(settings.sealedWebhookSecret, context: StripeSealing.webhookSecret(tenantId: tenantId)), as: UTF8.self)
            let now = admin.clock.unixSeconds
            guard WebhookSignature.isValid(header: request.headers[.init("Stripe-Signature")!], body: bytes, secret: secret, now: now) else {
                throw APIError.invalidRequest("Stripe-Signature is missing, does not match, or is older than 300 seconds.")
            }
            guard let event = try? JSONDecoder().decode(StripeEvent.self, from: Data(bytes)), !event.id.isEmpty, event.id.utf8.count <= 255 else {
                throw APIError.invalidRequest("Not a Stripe event.")
            }
            // Kept (sealed: it names the buyer) only while the event stays retryable.
            let sealer = admin.sealer
            let outcome = try await admin.stripeEvents.apply(event, tenantId: tenantId, now: now, sealEvent: {
                try sealer.seal(Data(bytes), context: StripeSealing.event(tenantId: tenantId, eventId: event.id))
            })
            if outcome == .unknownProduct {
                context.logger.notice("Stripe event for an unknown product or key type", metadata: ["event": .string(event.id), "tenant": .string(tenantId)])
                // Not 2xx, so Stripe sends it again (for up to three days) while the product is created.
                throw APIError.unknownProduct
            }
            return try JSONBody.response(Received(outcome: outcome.rawValue))
        }
    }
}
