import Foundation
import KeylightCore

/// What a Stripe event means for a tenant's licenses (protocol sections 5 and 6.6): the
/// decisions, made against a ``StripeLedger`` inside the transaction that records the event.
struct StripeEventRules {
    let event: StripeEvent
    let ledger: StripeLedger
    let sealer: SecretSealer
    var mailBuyers = false

    private var object: StripeObject { event.data.object }
    private var tenantId: String { ledger.tenantId }
    private var now: Int64 { ledger.now }

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
            // A paid upgrade, renewal or seats taken back: set back, the license kept.
            if try await ledger.paidChanges.undo(paymentRef: paymentIntent, reason: event.type) { return .undone }
            return try await ledger.revoke(.paymentIntent(paymentIntent), reason: event.type) ? .revoked : .noLicense
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
    static func storable(_ id: String?) -> String? {
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

    /// Money first: a completed session mints only once it is paid.
    private func checkout(paid: Bool) async throws -> StripeOutcome {
        guard isForThisTenant, let sessionId = Self.storable(object.id) else { return .ignored }
        try await ledger.recordSession(sessionId, successOrigin: object.successOrigin, paymentStatus: object.paymentStatus)
        guard paid else { return .awaitingPayment }
        if let named = object.metadata?["keylight_license_id"] {
            // A checkout for a license already sold: it changes that license, and never mints.
            guard let licenseId = PaidChangeLedger.licenseId(named), let price = Self.storable(object.metadata?["keylight_price_id"]) else { return .noLicense }
            let quantity = object.metadata?["keylight_quantity"].flatMap { Int($0) } ?? 1
            return switch try await ledger.paidChanges.apply(
                orderId: sessionId, paymentRef: Self.storable(object.paymentIntent), licenseId: licenseId, priceRef: price, quantity: quantity
            ) {
            case .applied: .applied
            case .alreadyApplied: .alreadyApplied
            case .refunded: .refunded
            case .noLicense: .noLicense
            case .noOffer: .noOffer
            case .refused: .notApplicable
            }
        }
        return try await mint(sessionId: sessionId)
    }

    /// One license per session, however many events or processes race: the session is claimed
    /// before the license is written.
    private func mint(sessionId: String) async throws -> StripeOutcome {
        guard let productId = object.metadata?["product_id"], let keyTypeId = object.metadata?["key_type_id"],
              let (keyType, prefix) = try await ledger.keyType(productId: productId, keyTypeId: keyTypeId) else {
            return .unknownProduct
        }
        let newKey = try LicenseKey.generate(prefix: prefix)
        let licenseId = UUID().uuidString.lowercased()
        let sealedKey = try sealer.seal(Data(newKey.text.utf8), context: StripeSealing.licenseKey(tenantId: tenantId, sessionId: sessionId))
        guard try await ledger.claimSession(sessionId, licenseId: licenseId, sealedKey: sealedKey) else { return .alreadyMinted }
        let subscription = Self.storable(object.subscription)
        let state = try await subscription.asyncMap { try await ledger.subscriptions.lock($0) } ?? nil
        let email = (object.customerDetails?.email ?? object.customerEmail)?.lowercased()
        var license = License(
            id: licenseId, tenantId: tenantId, productId: productId, keyTypeId: keyTypeId,
            keyHash: newKey.keyHash, maskedKey: newKey.masked, status: .active,
            expiresAt: SubscriptionState.firstExpiry(durationDays: keyType.durationDays, now: now, subscription: state),
            customerEmail: email, activeInstances: 0, createdAt: now, updatedAt: now,
            updatesUntil: keyType.updatesDays.map { now + Int64($0) * 86_400 }
        )
        license.waitForFirstActivation(keyType, subscription: subscription != nil)
        license.paymentSource = "stripe"
        license.paymentOrderId = sessionId
        // The address is Stripe's to tell, and anybody's to type at checkout: mailed only if it is
        // a plain address (a line break or control character would be a header injection).
        let mail = mailBuyers ? email.flatMap { try? MailAddress($0) }.map { MailRequest(kind: .license, to: $0.address) } : nil
        try await ledger.insertLicense(license, key: newKey, sealedKey: try LicenseKeySeal.seal(newKey, licenseId: licenseId, with: sealer), mail: mail,
                                       customer: object.customer, paymentIntent: object.paymentIntent, subscription: object.subscription, details: [
            "source": "stripe", "checkout_session": sessionId, "product_id": productId, "key_type_id": keyTypeId, "masked_key": newKey.masked,
        ])
        return .minted
    }

    /// The delayed payment never arrived: nothing is minted, and a license an earlier version
    /// minted on `completed` is revoked.
    private func paymentFailed() async throws -> StripeOutcome {
        guard isForThisTenant, let sessionId = Self.storable(object.id) else { return .ignored }
        try await ledger.recordSession(sessionId, successOrigin: object.successOrigin, paymentStatus: "failed")
        var revoked = false
        if let minted = try await ledger.mintedLicense(session: sessionId) {
            revoked = try await ledger.revoke(.id(minted), reason: event.type) || revoked
        }
        if let paymentIntent = object.paymentIntent {
            revoked = try await ledger.revoke(.paymentIntent(paymentIntent), reason: event.type) || revoked
        }
        return revoked ? .revoked : .paymentFailed
    }

    // MARK: Subscriptions

    /// The subscription's licenses expire when it ended (clamped to now), never later than they
    /// already did, and no later invoice revives them.
    private func subscriptionEnded() async throws -> StripeOutcome {
        guard let subscription = Self.storable(object.id) else { return .noLicense }
        return Self.outcome(try await ledger.subscriptions.apply(.ended(at: object.endedAt ?? event.created ?? now), to: subscription))
    }

    /// Expiry moves only forward, to the latest period any invoice paid for (not this
    /// invoice's: an older invoice arriving late sets nothing back), and never for a
    /// subscription that has ended. A license from a lifetime key type takes its first expiry
    /// from billing.
    private func invoicePaid() async throws -> StripeOutcome {
        guard let subscription = Self.storable(object.invoiceSubscription), let paidThrough = object.paidThrough else { return .ignored }
        return Self.outcome(try await ledger.subscriptions.apply(.paid(through: paidThrough), to: subscription))
    }

    static func outcome(_ effect: SubscriptionBook.Effect) -> StripeOutcome {
        switch effect {
        case .expired: .expired
        case .renewed: .renewed
        case .stale: .stale
        case .noLicense: .noLicense
        }
    }
}

private extension Optional {
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
