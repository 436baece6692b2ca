import SQLKit

extension Database {
    enum SetOffersResult: Sendable {
        case set
        case keyTypeNotFound
        /// An upgrade names a key type the product does not have.
        case unknownTarget(String)
        /// The price already mints licenses of a key type, or is another key type's offer: one
        /// price buys one thing.
        case priceTaken(String)
    }

    private static let offerColumns: SQLQueryString = "key_type_id, kind, target_key_type_id, provider, price_ref, price_label"

    private static func offer(_ row: any SQLRow) throws -> KeyTypeOffer? {
        guard let kind = KeyTypeOffer.Kind(rawValue: try row.decode(column: "kind", as: String.self)),
              let provider = KeyTypeOffer.Provider(rawValue: try row.decode(column: "provider", as: String.self)) else { return nil }
        return KeyTypeOffer(
            keyTypeId: try row.decode(column: "key_type_id", as: String.self), kind: kind,
            targetKeyTypeId: try row.decode(column: "target_key_type_id", as: String.self), provider: provider,
            priceRef: try row.decode(column: "price_ref", as: String.self), priceLabel: try row.decode(column: "price_label", as: String?.self)
        )
    }

    /// Replaces every offer of a key type, audited (`key_type.offers`).
    func setOffers(
        tenantId: String, productId: String, keyTypeId: String, offers: [KeyTypeOffer], upgradeRestartsUpdates: Bool, now: Int64, actor: AuditActor
    ) async throws -> SetOffersResult {
        try await write { db in
            let keyTypes = try await db.raw("SELECT id FROM key_types WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)")
                .all(decodingColumn: "id", as: String.self)
            guard keyTypes.contains(keyTypeId) else { return .keyTypeNotFound }
            if let missing = offers.first(where: { $0.kind == .upgrade && !keyTypes.contains($0.targetKeyTypeId) }) { return .unknownTarget(missing.targetKeyTypeId) }
            for offer in offers {
                let column: SQLQueryString = switch offer.provider {
                case .stripe: "stripe_price_id"
                case .paddle: "paddle_price_id"
                case .lemonSqueezy: "lemonsqueezy_variant_id"
                case .polar: "polar_product_id"
                }
                if try await db.raw("SELECT id FROM key_types WHERE tenant_id = \(bind: tenantId) AND \(column) = \(bind: offer.priceRef)").first() != nil {
                    return .priceTaken(offer.priceRef)
                }
                if try await db.raw("""
                    SELECT key_type_id FROM key_type_offers WHERE tenant_id = \(bind: tenantId) AND provider = \(bind: offer.provider.rawValue)
                    AND price_ref = \(bind: offer.priceRef) AND NOT (product_id = \(bind: productId) AND key_type_id = \(bind: keyTypeId))
                    """).first() != nil {
                    return .priceTaken(offer.priceRef)
                }
            }
            try await db.raw("""
                DELETE FROM key_type_offers WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND key_type_id = \(bind: keyTypeId)
                """).run()
            for offer in offers {
                try await db.raw("""
                    INSERT INTO key_type_offers (tenant_id, product_id, \(Self.offerColumns), created_at) VALUES (
                        \(bind: tenantId), \(bind: productId), \(bind: keyTypeId), \(bind: offer.kind.rawValue), \(bind: offer.targetKeyTypeId),
                        \(bind: offer.provider.rawValue), \(bind: offer.priceRef), \(bind: offer.priceLabel), \(bind: now))
                    """).run()
            }
            try await db.raw("""
                UPDATE key_types SET upgrade_restarts_updates = \(bind: upgradeRestartsUpdates)
                WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND id = \(bind: keyTypeId)
                """).run()
            try await Self.audit(db, at: now, actor: actor, action: "key_type.offers", tenantId: tenantId, target: "\(productId)/\(keyTypeId)", details: [
                "offers": offers.map { "\($0.kind.rawValue)\($0.targetKeyTypeId.isEmpty ? "" : ":" + $0.targetKeyTypeId) \($0.provider.rawValue) \($0.priceRef)" }.joined(separator: ", "),
                "upgrade_restarts_updates": "\(upgradeRestartsUpdates)",
            ])
            return .set
        }
    }

    /// A key type's offers, in kind, target and provider order.
    func offers(tenantId: String, productId: String, keyTypeId: String) async throws -> [KeyTypeOffer] {
        try await sql.raw("""
            SELECT \(Self.offerColumns) FROM key_type_offers
            WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND key_type_id = \(bind: keyTypeId)
            ORDER BY kind, target_key_type_id, provider
            """).all().compactMap(Self.offer)
    }

    /// The offer a provider's price buys, in a tenant (prices are unique per tenant and provider).
    static func offer(_ db: any SQLDatabase, tenantId: String, provider: KeyTypeOffer.Provider, priceRef: String) async throws -> (KeyTypeOffer, productId: String)? {
        guard let row = try await db.raw("""
            SELECT product_id, \(offerColumns) FROM key_type_offers
            WHERE tenant_id = \(bind: tenantId) AND provider = \(bind: provider.rawValue) AND price_ref = \(bind: priceRef)
            """).first(), let offer = try offer(row) else { return nil }
        return (offer, try row.decode(column: "product_id", as: String.self))
    }
}
