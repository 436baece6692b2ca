import Foundation

/// What a key type offers the licenses already sold of it: upgrades to other key types of its
/// product, a renewal, and extra seats, each at a price of one or more providers.
struct KeyTypeOffer: Sendable, Equatable {
    enum Kind: String, Sendable, CaseIterable {
        /// Moves the license to `targetKeyTypeId` (same key, same devices).
        case upgrade
        /// Another period: `expires_at` by the key type's `duration_days` and `updates_until` by
        /// its `updates_days`, each from its current date, or from now once past.
        case renewal
        /// Each unit bought raises the license's limit override by one.
        case seats
    }

    /// The payment paths a price can belong to: Stripe's own, and the merchants of record.
    enum Provider: String, Sendable, CaseIterable {
        case stripe, paddle
        case lemonSqueezy = "lemonsqueezy"
        case polar

        init(_ merchant: MerchantProvider) {
            switch merchant {
            case .paddle: self = .paddle
            case .lemonSqueezy: self = .lemonSqueezy
            case .polar: self = .polar
            }
        }
    }

    var keyTypeId: String
    var kind: Kind
    /// The key type an upgrade moves to; "" for a renewal or seats.
    var targetKeyTypeId: String
    var provider: Provider
    var priceRef: String
    /// "$29" or "€12 per seat", as the buyer's pages show it (the provider charges the real price).
    var priceLabel: String?
}

/// One offer's prices in the admin API: `{"to", "price_label", "stripe_price_id", "paddle_price_id",
/// "lemonsqueezy_variant_id", "polar_product_id"}` (`to` for upgrades only).
struct OfferPricesRequest: Codable, Sendable, Equatable {
    var to: String?
    var price_label: String?
    var stripe_price_id: String?
    var paddle_price_id: String?
    var lemonsqueezy_variant_id: String?
    var polar_product_id: String?

    /// The offers these prices make, checked (400 naming the field).
    func offers(keyTypeId: String, kind: KeyTypeOffer.Kind, field: String) throws -> [KeyTypeOffer] {
        let target: String
        if kind == .upgrade {
            target = try Field.pathId(to, "\(field).to")
            guard target != keyTypeId else { throw APIError.invalidRequest("Field \(field).to names the key type itself.") }
        } else {
            guard to == nil else { throw APIError.invalidRequest("Field \(field).to is for upgrades only.") }
            target = ""
        }
        let label = try Field.optional(price_label, "\(field).price_label", max: 100)
        var prices: [(KeyTypeOffer.Provider, String)] = []
        if let price = try Field.stripePrice(stripe_price_id) { prices.append((.stripe, price)) }
        if let price = try Field.paddlePrice(paddle_price_id) { prices.append((.paddle, price)) }
        if let variant = try Field.lemonSqueezyVariant(lemonsqueezy_variant_id) { prices.append((.lemonSqueezy, variant)) }
        if let product = try Field.polarProduct(polar_product_id) { prices.append((.polar, product)) }
        guard !prices.isEmpty else {
            throw APIError.invalidRequest("Field \(field) needs a price: stripe_price_id, paddle_price_id, lemonsqueezy_variant_id and/or polar_product_id.")
        }
        return prices.map { KeyTypeOffer(keyTypeId: keyTypeId, kind: kind, targetKeyTypeId: target, provider: $0.0, priceRef: $0.1, priceLabel: label) }
    }

    init(to: String? = nil, offers: [KeyTypeOffer]) {
        self.to = to
        price_label = offers.first?.priceLabel
        for offer in offers {
            switch offer.provider {
            case .stripe: stripe_price_id = offer.priceRef
            case .paddle: paddle_price_id = offer.priceRef
            case .lemonSqueezy: lemonsqueezy_variant_id = offer.priceRef
            case .polar: polar_product_id = offer.priceRef
            }
        }
    }
}

/// `PUT …/key-types/{id}/offers`: every offer of the key type, replaced as a whole; `GET` answers
/// the same shape.
struct KeyTypeOffersRequest: Codable, Sendable {
    var upgrades: [OfferPricesRequest]?
    var renewal: OfferPricesRequest?
    var seats: OfferPricesRequest?
    /// A paid upgrade *to this key type* restarts the updates window (default false: keeps it).
    var upgrade_restarts_updates: Bool?

    func offers(keyTypeId: String) throws -> [KeyTypeOffer] {
        guard (upgrades?.count ?? 0) <= 20 else { throw APIError.invalidRequest("At most 20 upgrades per key type.") }
        var offers: [KeyTypeOffer] = []
        for (index, upgrade) in (upgrades ?? []).enumerated() {
            offers += try upgrade.offers(keyTypeId: keyTypeId, kind: .upgrade, field: "upgrades[\(index)]")
        }
        if let renewal { offers += try renewal.offers(keyTypeId: keyTypeId, kind: .renewal, field: "renewal") }
        if let seats { offers += try seats.offers(keyTypeId: keyTypeId, kind: .seats, field: "seats") }
        var seen = Set<String>()
        for offer in offers {
            guard seen.insert("\(offer.provider.rawValue)\n\(offer.priceRef)").inserted else {
                throw APIError.invalidRequest("Price \(offer.priceRef) is named twice: each price buys one thing.")
            }
            guard seen.insert("\(offer.kind.rawValue)\n\(offer.targetKeyTypeId)\n\(offer.provider.rawValue)").inserted else {
                throw APIError.invalidRequest("Two \(offer.provider.rawValue) prices for the same \(offer.kind.rawValue)\(offer.targetKeyTypeId.isEmpty ? "" : " to \(offer.targetKeyTypeId)").")
            }
        }
        return offers
    }

    init(offers: [KeyTypeOffer], upgradeRestartsUpdates: Bool) {
        let upgrades = Dictionary(grouping: offers.filter { $0.kind == .upgrade }, by: \.targetKeyTypeId)
        self.upgrades = upgrades.keys.sorted().map { OfferPricesRequest(to: $0, offers: upgrades[$0]!) }
        let renewals = offers.filter { $0.kind == .renewal }
        renewal = renewals.isEmpty ? nil : OfferPricesRequest(offers: renewals)
        let seats = offers.filter { $0.kind == .seats }
        self.seats = seats.isEmpty ? nil : OfferPricesRequest(offers: seats)
        upgrade_restarts_updates = upgradeRestartsUpdates
    }
}
