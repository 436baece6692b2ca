import Foundation
import KeylightCore

/// `POST /{tenant}/{product}/appstore/activate`.
struct AppStoreActivateRequest: Decodable {
    /// The StoreKit 2 transaction's `jwsRepresentation`.
    var signed_transaction: String?
    var instance_name: String?
    var machine_hash: String?
}

/// Turns an App Store purchase into the license any other purchase makes, and activates it as
/// `activate` does (the same cap, lease and answer), adding the license's key.
struct AppStoreExchange: Sendable {
    let licensing: LicensingService
    let sealer: SecretSealer
    let verifier: AppStoreSignedData
    var database: Database { licensing.database }

    func activate(_ request: SDKBody<AppStoreActivateRequest>, product: Product) async throws -> ActivateResponse {
        let body = request.fields
        let signed = try Field.required(body.signed_transaction, "signed_transaction", max: AppStoreSignedData.maxBytes)
        let name = try Field.required(body.instance_name.map { Field.cut($0, maxBytes: 256) }, "instance_name", max: 256)
        let machineHash = try Field.optional(body.machine_hash, "machine_hash", max: 128)
        let transaction = try await verified(signed, product: product)
        guard let keyType = try await database.appStoreKeyType(tenantId: product.tenantId, productId: product.id, productIdentifier: transaction.productId) else {
            throw APIError.appStoreProductUnmapped
        }
        let now = licensing.clock.unixSeconds
        // A REFUND or REVOKE notification is checked inside the mint's transaction (appStoreLicense).
        guard transaction.revocationDate == nil else { throw APIError.appStoreTransactionRevoked }
        if let expires = transaction.expiresDate, expires <= now { throw APIError.appStoreTransactionExpired }
        let license: License, sealedKey: String
        do {
            (license, sealedKey) = try await database.appStoreLicense(
                AppStorePurchase(tenantId: product.tenantId, productId: product.id, keyType: keyType, keyPrefix: product.keyPrefix, transaction: transaction),
                sealer: sealer, now: now
            )
        } catch AppStoreMintRefusal.refunded {
            throw APIError.appStoreTransactionRevoked
        } catch AppStoreMintRefusal.otherProduct {
            throw APIError.appStoreProductUnmapped
        }
        let key = try LicenseKeySeal.open(sealedKey, licenseId: license.id, with: sealer)
        try licensing.limitLicense(try LicenseKey(key))
        let (instanceId, grant) = try await licensing.activateInstance(
            keyHash: license.keyHash, product: product, name: name, machineHash: machineHash, existingId: nil,
            freeTierId: nil, deviceKey: nil, change: .app, now: now, telemetry: request.telemetry
        )
        return ActivateResponse(
            instanceId: instanceId, licenseExpiresAt: grant.expiresAt,
            lease: try await licensing.lease(for: grant, tenantId: product.tenantId, instanceId: instanceId, now: now), seat: SeatReport(grant), summary: LicenseSummary(grant),
            licenseKey: key, appStore: (transaction.originalTransactionId, transaction.environment)
        )
    }

    /// The transaction, once its signature, chain, app and environment are this product's.
    func verified(_ signed: String, product: Product) async throws -> AppStoreTransaction {
        let payload = try await verifier.verify(signed)
        guard let transaction = AppStoreTransaction(payload) else { throw APIError.appStoreSignatureInvalid("the payload is not a StoreKit transaction") }
        guard let bundle = product.appStoreBundleId, transaction.bundleId == bundle else { throw APIError.appStoreBundleMismatch }
        guard product.acceptedAppStoreEnvironments.contains(transaction.environment) else { throw APIError.appStoreEnvironmentRefused }
        return transaction
    }
}
