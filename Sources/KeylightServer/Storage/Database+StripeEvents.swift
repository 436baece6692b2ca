import Foundation
import KeylightCore
import SQLKit

/// What applying a Stripe event did.
enum StripeOutcome: String, Sendable, CaseIterable {
    case duplicate, minted, revoked, expired, renewed, ignored
    case unknownProduct = "unknown_product"
    case noLicense = "no_license"
    /// A completed Checkout whose money has not arrived yet (delayed payment methods).
    case awaitingPayment = "awaiting_payment"
    /// The delayed payment failed: nothing minted (and anything minted earlier revoked).
    case paymentFailed = "payment_failed"
    /// The session's license exists already (completed, then async_payment_succeeded).
    case alreadyMinted = "already_minted"
    /// An invoice older than what the license already runs to, or for an ended subscription.
    case stale

    /// Outcomes Stripe should be told to send again (a non-2xx answer), and that stay
    /// retryable from the dashboard once Stripe stops.
    var isRetryable: Bool { self == .unknownProduct }
}

extension Database {
    /// Records `event` for `tenantId` and applies it in one transaction, so a repeated
    /// delivery (even a concurrent one) changes nothing. An event that named an unknown product
    /// is the exception: it is applied again when it comes back, until it applies.
    ///
    /// `sealEvent` seals the raw event; it is called, and the result kept, only when the event
    /// is retryable.
    func applyStripeEvent(_ event: StripeEvent, tenantId: String, now: Int64, sealEvent: @escaping @Sendable () throws -> String?, sealer: SecretSealer, retriedBy: Actor? = nil) async throws -> StripeOutcome {
        let outbox = self.outbox
        return try await write { db in
            let fresh = try await db.raw("""
                INSERT INTO stripe_events (tenant_id, id, type, outcome, event_created, attempts, sealed_event, received_at, updated_at)
                VALUES (\(bind: tenantId), \(bind: event.id), \(bind: event.type), 'pending', \(bind: event.created), 1, NULL, \(bind: now), \(bind: now))
                ON CONFLICT DO NOTHING RETURNING id
                """).first()
            if fresh == nil {
                // A retryable event is claimed by a conditional update: of two concurrent
                // retries, the second re-reads the row the first wrote and finds it settled.
                let retry = try await db.raw("""
                    UPDATE stripe_events SET outcome = 'pending', attempts = attempts + 1, updated_at = \(bind: now)
                    WHERE tenant_id = \(bind: tenantId) AND id = \(bind: event.id) AND outcome = \(bind: StripeOutcome.unknownProduct.rawValue)
                    RETURNING id
                    """).first()
                guard retry != nil else { return .duplicate }
            }
            let context = StripeApplication(event: event, tenantId: tenantId, now: now, outbox: outbox, sealer: sealer, db: db)
            let outcome = try await context.apply()
            try await db.raw("""
                UPDATE stripe_events SET outcome = \(bind: outcome.rawValue), sealed_event = \(bind: outcome.isRetryable ? try sealEvent() : nil), updated_at = \(bind: now)
                WHERE tenant_id = \(bind: tenantId) AND id = \(bind: event.id)
                """).run()
            if let retriedBy {
                try await Self.audit(db, at: now, actor: retriedBy, action: "stripe_event.retry", tenantId: tenantId, target: event.id, details: ["outcome": outcome.rawValue])
            }
            return outcome
        }
    }

    /// Events that are still retryable (or, with `outcome`, any outcome), newest first.
    public func stripeEvents(tenantId: String, outcome: String, limit: Int) async throws -> [StripeEventRecord] {
        try await sql.raw("""
            SELECT tenant_id, id, type, outcome, event_created, attempts, received_at, updated_at, sealed_event IS NOT NULL AS retryable
            FROM stripe_events WHERE tenant_id = \(bind: tenantId) AND outcome = \(bind: outcome)
            ORDER BY received_at DESC, id DESC LIMIT \(literal: limit)
            """).all(decoding: StripeEventRecord.self)
    }

    /// Drops kept events received before `cutoff` (they name the buyer; Stripe stopped sending
    /// them long before): still listed, no longer retryable. Returns how many.
    @discardableResult
    func purgeKeptStripeEvents(receivedBefore cutoff: Int64) async throws -> Int {
        try await write { db in
            try await db.raw("""
                UPDATE stripe_events SET sealed_event = NULL WHERE sealed_event IS NOT NULL AND received_at < \(bind: cutoff) RETURNING id
                """).all().count
        }
    }

    /// The sealed raw event kept for a retryable event; nil when there is none.
    func sealedStripeEvent(tenantId: String, id: String) async throws -> String? {
        try await sql.raw("SELECT sealed_event FROM stripe_events WHERE tenant_id = \(bind: tenantId) AND id = \(bind: id)")
            .first(decodingColumn: "sealed_event", as: String?.self) ?? nil
    }
}

/// A received Stripe event as the admin API and dashboard list it.
public struct StripeEventRecord: Decodable, Sendable {
    public var tenantId: String
    public var id: String
    public var type: String
    public var outcome: String
    public var eventCreated: Int64?
    public var attempts: Int
    public var receivedAt: Int64
    public var updatedAt: Int64
    /// Whether the event is kept and can be applied again.
    public var retryable: Bool

    enum CodingKeys: String, CodingKey {
        case tenantId = "tenant_id", id, type, outcome, eventCreated = "event_created", attempts
        case receivedAt = "received_at", updatedAt = "updated_at", retryable
    }
}

/// One event being applied inside its transaction (protocol sections 5 and 6.6).
private struct StripeApplication {
    let event: StripeEvent
    let tenantId: String
    let now: Int64
    let outbox: WebhookOutbox?
    let sealer: SecretSealer
    let db: any SQLDatabase

    var object: StripeObject { event.data.object }
    let stripe = Actor("stripe")


    func apply() async throws -> StripeOutcome {
        switch event.type {
        case "checkout.session.completed":
            return try await checkout(paid: object.isPaid)
        case "checkout.session.async_payment_succeeded":
            return try await checkout(paid: true)
        case "checkout.session.async_payment_failed":
            return try await paymentFailed()
        case "charge.refunded", "charge.dispute.created":
            guard let paymentIntent = object.paymentIntent else { return .noLicense }
            return try await revoke(where: "stripe_payment_intent_id = \(bind: paymentIntent)") ? .revoked : .noLicense
        case "customer.subscription.deleted":
            return try await subscriptionEnded()
        case "invoice.paid":
            return try await invoicePaid()
        default:
            return .ignored
        }
    }

    // MARK: Checkout

    /// A Stripe object id Keylight will store: present, non-empty and at most 255 bytes.
    private static func storable(_ id: String?) -> String? {
        guard let id, !id.isEmpty, id.utf8.count <= 255 else { return nil }
        return id
    }

    /// Sessions Keylight did not create (no product metadata) and sessions another tenant
    /// created on a shared Stripe account are not this tenant's business.
    private var isForThisTenant: Bool {
        guard object.metadata?["product_id"] != nil, object.metadata?["key_type_id"] != nil else { return false }
        if let named = object.metadata?["tenant_id"], named != tenantId { return false }
        return true
    }

    private func checkout(paid: Bool) async throws -> StripeOutcome {
        guard isForThisTenant, let sessionId = Self.storable(object.id) else { return .ignored }
        try await recordSession(sessionId, paymentStatus: object.paymentStatus)
        guard paid else { return .awaitingPayment }
        return try await mint(sessionId: sessionId)
    }

    /// Notes what the event says of the session. A settled status (`paid`, `failed`) is not
    /// undone by a late repeat of an earlier event; a failure always stands, and drops any key
    /// still waiting to be picked up.
    private func recordSession(_ sessionId: String, paymentStatus: String?) async throws {
        try await db.raw("""
            INSERT INTO checkout_sessions (tenant_id, id, success_origin, payment_status, created_at)
            VALUES (\(bind: tenantId), \(bind: sessionId), \(bind: object.successOrigin), \(bind: paymentStatus), \(bind: now))
            ON CONFLICT (tenant_id, id) DO UPDATE SET
                payment_status = CASE WHEN excluded.payment_status = 'failed' THEN 'failed'
                                      WHEN checkout_sessions.payment_status IN ('paid', 'failed') THEN checkout_sessions.payment_status
                                      ELSE excluded.payment_status END,
                sealed_license_key = CASE WHEN excluded.payment_status = 'failed' THEN NULL ELSE checkout_sessions.sealed_license_key END,
                success_origin = COALESCE(checkout_sessions.success_origin, excluded.success_origin)
            """).run()
    }

    private func mint(sessionId: String) async throws -> StripeOutcome {
        guard let productId = object.metadata?["product_id"], let keyTypeId = object.metadata?["key_type_id"],
              let keyType = try await db.raw("""
                  SELECT \(Database.keyTypeColumns) FROM key_types
                  WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND id = \(bind: keyTypeId)
                  """).first(decoding: KeyType.self),
              let prefix = try await db.raw("SELECT key_prefix FROM products WHERE tenant_id = \(bind: tenantId) AND id = \(bind: productId)")
                  .first(decodingColumn: "key_prefix", as: String.self) else {
            return .unknownProduct
        }
        let newKey = try LicenseKey.generate(prefix: prefix)
        let licenseId = UUID().uuidString.lowercased()
        // The claim: one license per session, however many events or processes race.
        let sealedKey = try sealer.seal(Data(newKey.text.utf8), context: StripeSealing.licenseKey(tenantId: tenantId, sessionId: sessionId))
        guard try await db.raw("""
            UPDATE checkout_sessions SET license_id = \(bind: licenseId), sealed_license_key = \(bind: sealedKey), minted_at = \(bind: now), payment_status = 'paid'
            WHERE tenant_id = \(bind: tenantId) AND id = \(bind: sessionId) AND license_id IS NULL
            RETURNING id
            """).first() != nil else { return .alreadyMinted }

        var expiresAt = keyType.durationDays.map { now + Int64($0) * 86_400 }
        if let subscription = Self.storable(object.subscription), let state = try await lockedSubscriptionState(subscription) {
            // Events for the subscription may have come first.
            if let paidThrough = state.paidThrough, expiresAt.map({ paidThrough > $0 }) ?? true { expiresAt = paidThrough }
            if let endedAt = state.endedAt { expiresAt = min(expiresAt ?? endedAt, endedAt) }
        }
        let email = (object.customerDetails?.email ?? object.customerEmail)?.lowercased()
        let license = License(
            id: licenseId, tenantId: tenantId, productId: productId, keyTypeId: keyTypeId,
            keyHash: newKey.keyHash, maskedKey: newKey.masked, status: .active, expiresAt: expiresAt,
            customerEmail: email, activeInstances: 0, createdAt: now, updatedAt: now
        )
        try await db.raw("""
            INSERT INTO licenses (\(Database.licenseColumns), stripe_customer_id, stripe_payment_intent_id, stripe_subscription_id) VALUES (
                \(bind: licenseId), \(bind: tenantId), \(bind: productId), \(bind: keyTypeId), \(bind: newKey.keyHash), \(bind: newKey.masked),
                'active', \(bind: expiresAt), \(bind: email), 0, \(bind: now), \(bind: now),
                \(bind: object.customer), \(bind: object.paymentIntent), \(bind: object.subscription))
            """).run()
        try await Database.audit(db, at: now, actor: stripe, action: "license.create", tenantId: tenantId, target: licenseId, details: [
            "source": "stripe", "event": event.id, "checkout_session": sessionId, "product_id": productId, "key_type_id": keyTypeId, "masked_key": newKey.masked,
        ])
        try await outbox.enqueue(WebhookEvent(type: .licenseCreated, tenantId: tenantId, at: now, data: .init(license: license, licenseKey: newKey.text, source: stripe.name)), on: db)
        return .minted
    }

    /// The delayed payment never arrived: nothing is minted, and a license an earlier version
    /// minted on `completed` is revoked.
    private func paymentFailed() async throws -> StripeOutcome {
        guard isForThisTenant, let sessionId = Self.storable(object.id) else { return .ignored }
        try await recordSession(sessionId, paymentStatus: "failed")
        let minted = try await db.raw("SELECT license_id FROM checkout_sessions WHERE tenant_id = \(bind: tenantId) AND id = \(bind: sessionId)")
            .first(decodingColumn: "license_id", as: String?.self) ?? nil
        var revoked = false
        if let minted { revoked = try await revoke(where: "id = \(bind: minted)") || revoked }
        if let paymentIntent = object.paymentIntent { revoked = try await revoke(where: "stripe_payment_intent_id = \(bind: paymentIntent)") || revoked }
        return revoked ? .revoked : .paymentFailed
    }

    /// Revokes the tenant's active or suspended licenses matching `condition`; true if any.
    private func revoke(where condition: SQLQueryString) async throws -> Bool {
        let licenses = try await db.raw("""
            UPDATE licenses SET status = 'revoked', updated_at = \(bind: now)
            WHERE tenant_id = \(bind: tenantId) AND status <> 'revoked' AND \(condition) RETURNING \(Database.licenseColumns)
            """).all(decoding: License.self)
        for license in licenses {
            try await Database.audit(db, at: now, actor: stripe, action: "license.revoke", tenantId: tenantId, target: license.id, details: ["event": event.id, "reason": event.type])
            try await outbox.enqueue(WebhookEvent(type: .licenseRevoked, tenantId: tenantId, at: now, data: .init(license: license, source: stripe.name)), on: db)
        }
        return !licenses.isEmpty
    }

    // MARK: Subscriptions

    /// The subscription's state, its row locked until the transaction ends: an `invoice.paid` or
    /// deletion processed at the same moment (Stripe sends them milliseconds apart) waits for
    /// this mint, then finds its license; or this mint waits for it, then reads what it wrote.
    private func lockedSubscriptionState(_ id: String) async throws -> (paidThrough: Int64?, endedAt: Int64?)? {
        try await db.raw("""
            INSERT INTO stripe_subscriptions (tenant_id, id, paid_through, ended_at, updated_at)
            VALUES (\(bind: tenantId), \(bind: id), NULL, NULL, \(bind: now))
            ON CONFLICT (tenant_id, id) DO UPDATE SET updated_at = excluded.updated_at
            """).run()
        return try await subscriptionState(id)
    }

    private func subscriptionState(_ id: String) async throws -> (paidThrough: Int64?, endedAt: Int64?)? {
        guard let row = try await db.raw("""
            SELECT paid_through, ended_at FROM stripe_subscriptions WHERE tenant_id = \(bind: tenantId) AND id = \(bind: id)
            """).first() else { return nil }
        return (try row.decode(column: "paid_through", as: Int64?.self), try row.decode(column: "ended_at", as: Int64?.self))
    }

    /// The subscription's end is recorded (the earliest one Stripe reported wins) and its
    /// licenses expire then, never later than they already did.
    private func subscriptionEnded() async throws -> StripeOutcome {
        guard let subscription = Self.storable(object.id) else { return .noLicense }
        let endedAt = min(object.endedAt ?? event.created ?? now, now)
        try await db.raw("""
            INSERT INTO stripe_subscriptions (tenant_id, id, paid_through, ended_at, updated_at)
            VALUES (\(bind: tenantId), \(bind: subscription), NULL, \(bind: endedAt), \(bind: now))
            ON CONFLICT (tenant_id, id) DO UPDATE SET
                ended_at = CASE WHEN stripe_subscriptions.ended_at IS NULL OR excluded.ended_at < stripe_subscriptions.ended_at
                                THEN excluded.ended_at ELSE stripe_subscriptions.ended_at END,
                updated_at = excluded.updated_at
            """).run()
        let licenses = try await db.raw("""
            UPDATE licenses SET expires_at = \(bind: endedAt), updated_at = \(bind: now)
            WHERE tenant_id = \(bind: tenantId) AND stripe_subscription_id = \(bind: subscription)
              AND (expires_at IS NULL OR expires_at > \(bind: endedAt))
            RETURNING \(Database.licenseColumns)
            """).all(decoding: License.self)
        try await announce(licenses, action: "license.expire", type: .licenseExpired, expiresAt: endedAt)
        if !licenses.isEmpty { return .expired }
        return try await hasLicenses(subscription: subscription) ? .stale : .noLicense
    }

    /// Expiry moves only forward, to the latest period any invoice paid for, and never for a
    /// subscription that has ended: invoices arrive in any order, and late. A subscription's
    /// license minted from a lifetime key type takes its expiry from billing.
    private func invoicePaid() async throws -> StripeOutcome {
        guard let subscription = Self.storable(object.invoiceSubscription),
              let paidThrough = object.paidThrough else { return .ignored }
        try await db.raw("""
            INSERT INTO stripe_subscriptions (tenant_id, id, paid_through, ended_at, updated_at)
            VALUES (\(bind: tenantId), \(bind: subscription), \(bind: paidThrough), NULL, \(bind: now))
            ON CONFLICT (tenant_id, id) DO UPDATE SET
                paid_through = CASE WHEN stripe_subscriptions.paid_through IS NULL OR excluded.paid_through > stripe_subscriptions.paid_through
                                    THEN excluded.paid_through ELSE stripe_subscriptions.paid_through END,
                updated_at = excluded.updated_at
            """).run()
        guard let state = try await subscriptionState(subscription), state.endedAt == nil, let latest = state.paidThrough else {
            return try await hasLicenses(subscription: subscription) ? .stale : .noLicense
        }
        // The latest period any invoice paid for, not this invoice's: an older invoice arriving
        // late sets nothing back. A license without an expiry yet gets its first from billing.
        let licenses = try await db.raw("""
            UPDATE licenses SET expires_at = \(bind: latest), updated_at = \(bind: now)
            WHERE tenant_id = \(bind: tenantId) AND stripe_subscription_id = \(bind: subscription)
              AND status <> 'revoked' AND (expires_at IS NULL OR expires_at < \(bind: latest))
            RETURNING \(Database.licenseColumns)
            """).all(decoding: License.self)
        try await announce(licenses, action: "license.renew", type: .licenseRenewed, expiresAt: latest)
        if !licenses.isEmpty { return .renewed }
        return try await hasLicenses(subscription: subscription) ? .stale : .noLicense
    }

    /// The audit entry and webhook event of each license whose expiry an event moved.
    private func announce(_ licenses: [License], action: String, type: WebhookEventType, expiresAt: Int64) async throws {
        for license in licenses {
            try await Database.audit(db, at: now, actor: stripe, action: action, tenantId: tenantId, target: license.id, details: ["event": event.id, "expires_at": String(expiresAt)])
            try await outbox.enqueue(WebhookEvent(type: type, tenantId: tenantId, at: now, data: .init(license: license, source: stripe.name)), on: db)
        }
    }

    private func hasLicenses(subscription: String) async throws -> Bool {
        try await db.raw("SELECT id FROM licenses WHERE tenant_id = \(bind: tenantId) AND stripe_subscription_id = \(bind: subscription) LIMIT 1").first() != nil
    }
}
