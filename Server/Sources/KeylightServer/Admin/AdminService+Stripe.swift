import Foundation
import KeylightCore

extension AdminService {
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
