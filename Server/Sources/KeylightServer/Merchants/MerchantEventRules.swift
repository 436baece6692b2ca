import Foundation
import KeylightCore

/// What a merchant event means for a tenant's licenses, the same for every provider: decisions
/// made against a ``MerchantLedger`` inside the transaction that records the event.
struct MerchantEventRules {
    let event: MerchantEvent
    let ledger: MerchantLedger
    let sealer: SecretSealer
    var mailBuyers = false

    /// One order mints at most this many licenses: a signed event is still the provider's word
    /// on what was bought, and a typo'd quantity must not fill the database.
    static let maxLicensesPerOrder = 100

    private var tenantId: String { ledger.tenantId }
    private var now: Int64 { ledger.now }

    func apply() async throws -> MerchantOutcome {
        switch event.action {
        case .purchase(let purchase): try await mint(purchase)
        case .subscription(let update): try await subscription(update)
        case .refund(let orderId, let full, let reason): try await refund(orderId, full: full, reason: reason)
        case .renewalRefunded(let subscription, _): try await expireNow(subscription)
        case .customer(let id, let email): try await customer(id, email: email)
        case .ignored(let outcome): outcome
        }
    }

    // MARK: Purchases

    /// One license per quantity of each mapped item, once per order, for money received.
    private func mint(_ purchase: MerchantPurchase) async throws -> MerchantOutcome {
        if let licenseId = purchase.licenseId { return try await change(licenseId, purchase) }
        // A payment for a subscription that has its licenses already is a renewal, whatever the
        // event calls it: a subscription mints once.
        if let subscription = purchase.subscriptionId, try await ledger.subscriptions.hasLicenses(subscription) {
            return try await self.subscription(MerchantSubscriptionUpdate(id: subscription, paymentId: purchase.orderId, paidThrough: purchase.paidThrough))
        }
        var lines: [(keyType: KeyType, prefix: String, quantity: Int)] = []
        for item in purchase.items where item.quantity > 0 {
            if let (keyType, prefix) = try await ledger.keyType(mappingId: item.mappingId) { lines.append((keyType, prefix, item.quantity)) }
        }
        guard !lines.isEmpty else { return .unmapped }
        let count = lines.reduce(0) { $0 + min($1.quantity, Self.maxLicensesPerOrder + 1) }
        guard count <= Self.maxLicensesPerOrder else { return .tooManyLicenses }
        let subscription: String?
        switch try await ledger.claimOrder(purchase.orderId, licenses: count) {
        case .alreadyMinted: return .alreadyMinted
        case .refunded: return .refunded
        case .claimed(let linked): subscription = purchase.subscriptionId ?? linked
        }
        if let subscription, let paidThrough = purchase.paidThrough { try await ledger.subscriptions.recordPaidThrough(subscription, paidThrough) }
        var state: SubscriptionState?
        if let subscription { state = try await ledger.subscriptions.lock(subscription) }
        let email = try await address(for: purchase)
        // The address is the buyer's to type at checkout: mailed only if it is a plain address
        // (a line break or control character would be a header injection).
        let mail = mailBuyers ? email.flatMap { try? MailAddress($0) }.map { MailRequest(kind: .license, to: $0.address) } : nil
        for line in lines {
            for _ in 0..<line.quantity {
                let key = try LicenseKey.generate(prefix: line.prefix)
                let licenseId = UUID().uuidString.lowercased()
                var license = License(
                    id: licenseId, tenantId: tenantId, productId: line.keyType.productId, keyTypeId: line.keyType.id,
                    keyHash: key.keyHash, maskedKey: key.masked, status: .active,
                    expiresAt: SubscriptionState.firstExpiry(durationDays: line.keyType.durationDays, now: now, subscription: state),
                    customerEmail: email, activeInstances: 0, createdAt: now, updatedAt: now,
                    updatesUntil: line.keyType.updatesDays.map { now + Int64($0) * 86_400 }
                )
                license.waitForFirstActivation(line.keyType, subscription: state != nil || subscription != nil)
                license.paymentSource = ledger.provider.rawValue
                license.paymentOrderId = purchase.orderId
                try await ledger.insertLicense(license, key: key, sealedKey: try LicenseKeySeal.seal(key, licenseId: licenseId, with: sealer), mail: mail,
                                               subscription: subscription, customer: purchase.customerId)
            }
        }
        return .minted
    }

    /// The buyer's address: the event's own, else the customer's as already learnt; failing
    /// both, the license waits for it (a customer event, or a lookup with the tenant's API key).
    private func address(for purchase: MerchantPurchase) async throws -> String? {
        if let email = purchase.email.flatMap(Self.plainAddress) { return email }
        guard let customer = purchase.customerId else { return nil }
        if let known = try await ledger.customerEmail(customer) { return known }
        // Only Paddle's events leave the address out; the others' are the buyer's own.
        if ledger.provider == .paddle { try await ledger.awaitCustomer(customer) }
        return nil
    }

    /// A lower-cased address when `text` is a plain one (what licenses store), else nil.
    static func plainAddress(_ text: String) -> String? {
        (try? MailAddress(text)).map { $0.address.lowercased() }
    }

    // MARK: Refunds

    /// A refunded purchase revokes its licenses; a refunded renewal payment takes its period
    /// back (the subscription's licenses expire now; a later paid renewal extends them again).
    private func refund(_ orderId: String, full: Bool, reason: String) async throws -> MerchantOutcome {
        guard full else { return .partialRefund }
        let prior = try await ledger.recordRefund(orderId)
        if prior.status == "renewal", let subscription = prior.subscriptionId { return try await expireNow(subscription) }
        if prior.status == "minted" { return try await ledger.revoke(order: orderId, reason: reason) ? .revoked : .noLicense }
        // Not a purchase that minted: a paid upgrade, renewal or seats for a license (set back, the
        // license kept), or one whose payment is still to come (which then changes nothing).
        if try await ledger.paidChanges.undo(orderId: orderId, reason: reason) { return .undone }
        return try await ledger.revoke(order: orderId, reason: reason) ? .revoked : .noLicense
    }

    private func expireNow(_ subscription: String) async throws -> MerchantOutcome {
        if try await !ledger.subscriptions.expireLicenses(subscription, at: now).isEmpty { return .expired }
        return try await ledger.subscriptions.hasLicenses(subscription) ? .stale : .noLicense
    }

    /// A payment for a license already sold: the first item's price names the offer, once per order.
    private func change(_ licenseId: String, _ purchase: MerchantPurchase) async throws -> MerchantOutcome {
        guard let item = purchase.items.first(where: { $0.quantity > 0 }) else { return .noOffer }
        return switch try await ledger.paidChanges.apply(orderId: purchase.orderId, paymentRef: nil, licenseId: licenseId, priceRef: item.mappingId, quantity: item.quantity) {
        case .applied: .applied
        case .alreadyApplied: .alreadyApplied
        case .refunded: .refunded
        case .noLicense: .noLicense
        case .noOffer: .noOffer
        case .refused: .notApplicable
        }
    }

    // MARK: Subscriptions

    /// As for Stripe (``SubscriptionBook/apply(_:to:)``): expiry moves only forward, to the
    /// latest period paid for, and never for a subscription that ended; an end moves expiry back
    /// to it (clamped to now), once.
    private func subscription(_ update: MerchantSubscriptionUpdate) async throws -> MerchantOutcome {
        if let order = update.orderId { try await ledger.linkOrder(order, subscription: update.id) }
        if let payment = update.paymentId {
            switch try await ledger.recordRenewal(payment, subscription: update.id) {
            case .recorded: break
            case .refunded: return .refunded
            case .alreadyMinted: return .alreadyMinted
            }
        }
        let change: SubscriptionBook.Change
        if update.ended {
            change = .ended(at: update.endedAt ?? now)
        } else if let paidThrough = update.paidThrough {
            change = .paid(through: paidThrough)
        } else {
            return try await ledger.subscriptions.hasLicenses(update.id) ? .stale : .noLicense
        }
        return switch try await ledger.subscriptions.apply(change, to: update.id) {
        case .expired: .expired
        case .renewed: .renewed
        case .stale: .stale
        case .noLicense: .noLicense
        }
    }

    // MARK: Customers

    private func customer(_ id: String, email: String) async throws -> MerchantOutcome {
        guard let address = Self.plainAddress(email) else { return .ignored }
        _ = try await ledger.learnCustomer(id, email: address, mail: mailBuyers)
        return .customer
    }
}
