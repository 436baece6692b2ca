import Foundation
import KeylightCore

extension AdminService {
    func setStripe(tenantId: String, _ body: StripeSettingsRequest, actor: AuditActor) async throws {
        _ = try await requireTenant(tenantId)
        let webhookSecret = try Field.optional(body.webhook_secret.flatMap { $0.isEmpty ? nil : $0 }, "webhook_secret", max: 256)
        let secretKey: StripeSecretChange
        switch body.secret_key {
        case .none: secretKey = .keep
        case .some(.none): secretKey = .remove
        case .some(.some(let value)):
            if value.isEmpty {
                secretKey = .keep
            } else {
                let key = try Field.required(value, "secret_key", max: 256)
                secretKey = .set(try sealer.seal(Data(key.utf8), context: StripeSealing.secretKey(tenantId: tenantId)))
            }
        }
        guard try await database.setStripeSettings(
            tenantId: tenantId,
            sealedWebhookSecret: try webhookSecret.map { try sealer.seal(Data($0.utf8), context: StripeSealing.webhookSecret(tenantId: tenantId)) },
            secretKey: secretKey, now: clock.unixSeconds, actor: actor
        ) else {
            // The request is well formed; it conflicts with what is stored (nothing yet).
            throw APIError.conflict("Missing field webhook_secret (required until one is stored).")
        }
    }

    /// Received Stripe events with `outcome` (default: the retryable `unknown_product`).
    func stripeEvents(tenantId: String, outcome: String?, limit: Int) async throws -> [StripeEventRecord] {
        _ = try await requireTenant(tenantId)
        let outcome = outcome ?? StripeOutcome.unknownProduct.rawValue
        guard StripeOutcome(rawValue: outcome) != nil else {
            throw APIError.invalidRequest("Unknown outcome; known: \(StripeOutcome.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        return try await database.stripeEvents(tenantId: tenantId, outcome: outcome, limit: limit)
    }

    /// Applies a kept event again (after its product or key type was created), exactly as if
    /// Stripe had sent it again.
    func retryStripeEvent(tenantId: String, id: String, actor: AuditActor) async throws -> StripeOutcome {
        _ = try await requireTenant(tenantId)
        guard id.utf8.count <= 255, let sealed = try await database.sealedStripeEvent(tenantId: tenantId, id: id) else {
            throw APIError.notFound("Retryable Stripe event")
        }
        let raw = try sealer.open(sealed, context: StripeSealing.event(tenantId: tenantId, eventId: id))
        guard let event = try? JSONDecoder().decode(StripeEvent.self, from: raw), event.id == id else { throw APIError.internalError }
        return try await stripeEvents.apply(event, tenantId: tenantId, now: clock.unixSeconds, sealEvent: { sealed }, retriedBy: actor)
    }
}
