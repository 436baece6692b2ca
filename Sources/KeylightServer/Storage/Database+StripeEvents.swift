import Foundation
import KeylightCore
import SQLKit

/// What applying a Stripe event did.
enum StripeOutcome: String, Sendable {
    case duplicate, minted, revoked, expired, renewed, unknownProduct = "unknown_product", noLicense = "no_license", ignored
}

extension Database {
    /// Records `event` and applies it in one transaction, so a repeated delivery (even a
    /// concurrent one) changes nothing.
    func applyStripeEvent(_ event: StripeEvent, tenantId: String, now: Int64) async throws -> StripeOutcome {
        let outbox = self.outbox
        return try await write { db in
            let fresh = try await db.raw("""
                INSERT INTO stripe_events (id, tenant_id, type, outcome, received_at)
                VALUES (\(bind: event.id), \(bind: tenantId), \(bind: event.type), 'pending', \(bind: now))
                ON CONFLICT DO NOTHING RETURNING id
                """).first()
            guard fresh != nil else { return .duplicate }
            let outcome = try await Self.apply(event, tenantId: tenantId, now: now, outbox: outbox, on: db)
            try await db.raw("UPDATE stripe_events SET outcome = \(bind: outcome.rawValue) WHERE id = \(bind: event.id)").run()
            return outcome
        }
    }

    private static func apply(_ event: StripeEvent, tenantId: String, now: Int64, outbox: WebhookOutbox?, on db: any SQLDatabase) async throws -> StripeOutcome {
        let object = event.data.object
        let stripe = Actor("stripe")
        switch event.type {
        case "checkout.session.completed":
            guard let productId = object.metadata?["product_id"], let keyTypeId = object.metadata?["key_type_id"],
                  let keyType = try await db.raw("""
                      SELECT \(keyTypeColumns) FROM key_types
                      WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND id = \(bind: keyTypeId)
                      """).first(decoding: KeyType.self),
                  let prefix = try await db.raw("SELECT key_prefix FROM products WHERE tenant_id = \(bind: tenantId) AND id = \(bind: productId)")
                      .first(decodingColumn: "key_prefix", as: String.self) else {
                return .unknownProduct
            }
            let newKey = try LicenseKey.generate(prefix: prefix)
            let email = (object.customerDetails?.email ?? object.customerEmail)?.lowercased()
            let license = License(
                id: UUID().uuidString.lowercased(), tenantId: tenantId, productId: productId, keyTypeId: keyTypeId,
                keyHash: newKey.keyHash, maskedKey: newKey.masked, status: .active, expiresAt: keyType.durationDays.map { now + Int64($0) * 86_400 },
                customerEmail: email, activeInstances: 0, createdAt: now, updatedAt: now
            )
            let licenseId = license.id
            try await db.raw("""
                INSERT INTO licenses (\(licenseColumns), stripe_customer_id, stripe_payment_intent_id, stripe_subscription_id) VALUES (
                    \(bind: licenseId), \(bind: tenantId), \(bind: productId), \(bind: keyTypeId), \(bind: newKey.keyHash), \(bind: newKey.masked),
                    'active', \(bind: license.expiresAt), \(bind: email), 0, \(bind: now), \(bind: now),
                    \(bind: object.customer), \(bind: object.paymentIntent), \(bind: object.subscription))
                """).run()
            try await audit(db, at: now, actor: stripe, action: "license.create", tenantId: tenantId, target: licenseId, details: [
                "source": "stripe", "event": event.id, "product_id": productId, "key_type_id": keyTypeId, "masked_key": newKey.masked,
            ])
            try await outbox.enqueue(WebhookEvent(type: .licenseCreated, tenantId: tenantId, at: now, data: .init(license: license, licenseKey: newKey.text, source: stripe.name)), on: db)
            return .minted
        case "charge.refunded", "charge.dispute.created":
            guard let paymentIntent = object.paymentIntent else { return .noLicense }
            let licenses = try await db.raw("""
                UPDATE licenses SET status = 'revoked', updated_at = \(bind: now)
                WHERE tenant_id = \(bind: tenantId) AND stripe_payment_intent_id = \(bind: paymentIntent) RETURNING \(licenseColumns)
                """).all(decoding: License.self)
            for license in licenses {
                try await audit(db, at: now, actor: stripe, action: "license.revoke", tenantId: tenantId, target: license.id, details: ["event": event.id, "reason": event.type])
                try await outbox.enqueue(WebhookEvent(type: .licenseRevoked, tenantId: tenantId, at: now, data: .init(license: license, source: stripe.name)), on: db)
            }
            return licenses.isEmpty ? .noLicense : .revoked
        case "customer.subscription.deleted":
            guard let subscription = object.id else { return .noLicense }
            let licenses = try await db.raw("""
                UPDATE licenses SET expires_at = \(bind: now), updated_at = \(bind: now)
                WHERE tenant_id = \(bind: tenantId) AND stripe_subscription_id = \(bind: subscription) RETURNING \(licenseColumns)
                """).all(decoding: License.self)
            for license in licenses {
                try await audit(db, at: now, actor: stripe, action: "license.expire", tenantId: tenantId, target: license.id, details: ["event": event.id])
                try await outbox.enqueue(WebhookEvent(type: .licenseExpired, tenantId: tenantId, at: now, data: .init(license: license, source: stripe.name)), on: db)
            }
            return licenses.isEmpty ? .noLicense : .expired
        case "invoice.paid":
            guard let subscription = object.subscription, let paidThrough = object.paidThrough else { return .ignored }
            let licenses = try await db.raw("""
                UPDATE licenses SET expires_at = \(bind: paidThrough), updated_at = \(bind: now)
                WHERE tenant_id = \(bind: tenantId) AND stripe_subscription_id = \(bind: subscription) RETURNING \(licenseColumns)
                """).all(decoding: License.self)
            for license in licenses {
                try await audit(db, at: now, actor: stripe, action: "license.renew", tenantId: tenantId, target: license.id, details: ["event": event.id, "expires_at": String(paidThrough)])
                try await outbox.enqueue(WebhookEvent(type: .licenseRenewed, tenantId: tenantId, at: now, data: .init(license: license, source: stripe.name)), on: db)
            }
            return licenses.isEmpty ? .noLicense : .renewed
        default:
            return .ignored
        }
    }
}

