/// What each key type offers its licenses after the sale (issue 49): upgrades, a renewal, seats.
extension AdminService {
    func setOffers(tenantId: String, productId: String, keyTypeId: String, _ body: KeyTypeOffersRequest, actor: AuditActor) async throws -> KeyTypeOffersRequest {
        _ = try await requireKeyType(tenantId: tenantId, productId: productId, id: keyTypeId)
        let offers = try body.offers(keyTypeId: keyTypeId)
        let restarts = body.upgrade_restarts_updates ?? false
        switch try await database.setOffers(
            tenantId: tenantId, productId: productId, keyTypeId: keyTypeId, offers: offers, upgradeRestartsUpdates: restarts, now: clock.unixSeconds, actor: actor
        ) {
        case .set: return KeyTypeOffersRequest(offers: offers, upgradeRestartsUpdates: restarts)
        case .keyTypeNotFound: throw APIError.notFound("Key type")
        case .unknownTarget(let target):
            throw APIError(status: .unprocessableContent, code: "UNKNOWN_KEY_TYPE", message: "Product \(productId) has no key type \(target) to upgrade to.")
        case .priceTaken(let price):
            throw APIError.conflict("Price \(price) already buys something else in this tenant (a new license, or another offer): one price buys one thing.")
        }
    }

    func offers(tenantId: String, productId: String, keyTypeId: String) async throws -> KeyTypeOffersRequest {
        let keyType = try await requireKeyType(tenantId: tenantId, productId: productId, id: keyTypeId)
        return KeyTypeOffersRequest(
            offers: try await database.offers(tenantId: tenantId, productId: productId, keyTypeId: keyTypeId),
            upgradeRestartsUpdates: keyType.upgradeRestartsUpdates ?? false
        )
    }
}
