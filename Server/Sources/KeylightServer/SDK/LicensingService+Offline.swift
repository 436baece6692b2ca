import Crypto
import Foundation
import KeylightCore
import KeylightSigning

/// Seats a customer can see (protocol 6.3) and offline activation (6.4), shared by the SDK
/// routes, the customer portal and the dashboard.
extension LicensingService {
    func instances(_ body: InstancesRequest, product: Product) async throws -> SeatsResponse {
        let key = try Field.licenseKey(body.license_key)
        try limitLicense(key)
        return try await seats(keyHash: key.keyHash, product: product, refusing: true)
    }

    /// The license with `keyHash` in `product` and its active instances, oldest first; nil when no
    /// license has that key. Not refused whatever its status (the portal shows a revoked license too).
    func activeInstances(keyHash: String, product: Product) async throws -> (LicenseGrant, [Instance])? {
        try await database.activeInstances(keyHash: keyHash, tenantId: product.tenantId, productId: product.id)
    }

    /// The license's active devices. `refusing`: a revoked or suspended license is refused as
    /// `validate` refuses it (the 409 of a full license lists them whatever the status).
    func seats(keyHash: String, product: Product, refusing: Bool = false) async throws -> SeatsResponse {
        guard let (grant, instances) = try await database.activeInstances(keyHash: keyHash, tenantId: product.tenantId, productId: product.id) else {
            throw try await unknownKey(keyHash, product: product)
        }
        if refusing, let refusal = LicenseRules.refusal(grant, now: clock.unixSeconds, activating: false) { throw refusal }
        return SeatsResponse(activationLimit: grant.activationLimit, instances: instances)
    }

    func offlineActivate(_ body: OfflineActivateRequest, product: Product) async throws -> OfflineActivateResponse {
        let key = try Field.licenseKey(body.license_key)
        let text = try Field.offlineFile(body.request, "request")
        try limitLicense(key)
        let response = try await offlineResponse(keyHash: key.keyHash, requestText: text, product: product, change: InstanceChange(actor: .offline, how: .offlineRequest))
        return OfflineActivateResponse(response: response.armored)
    }

    /// Activates the device of an offline request file on the license with `keyHash`: the same
    /// cap and same-machine rules as `activate`, a lease of the key type's `offline_lease_days`
    /// (never past the license's expiry), and a config valid as long as the lease.
    func offlineResponse(keyHash: String, requestText: String, product: Product, change: InstanceChange) async throws -> OfflineActivationResponse {
        let request: OfflineActivationRequest
        do {
            request = try OfflineActivationRequest(armored: requestText)
        } catch {
            throw APIError.invalidRequest("The activation request is malformed: \(error.description)")
        }
        guard request.tenantId == product.tenantId, request.productId == product.id else {
            throw APIError.invalidRequest("The activation request was made for \(request.tenantId)/\(request.productId), not this product.")
        }
        let now = clock.unixSeconds
        let (instanceId, grant) = try await activateInstance(
            keyHash: keyHash, product: product, name: request.instanceName, machineHash: request.machineHash, existingId: nil,
            freeTierId: nil, deviceKey: request.deviceKeyBase64, change: change, now: now
        )
        let key = try await signingKey(tenantId: product.tenantId)
        let lease = try LicenseRules.lease(for: grant, instanceId: instanceId, now: now, ttl: Int64(grant.offlineLeaseDays) * 86_400, key: key)
        let config = ProductConfig(
            tenantId: product.tenantId, productId: product.id, trialDurationDays: product.trialDurationDays,
            freeTierEnabled: product.freeTierEnabled, issuedAt: now, expiresAt: max(lease.expiresAt, now + Self.configLifetime)
        ).signed(with: key)
        return OfflineActivationResponse.make(request: request, instanceId: instanceId, licenseExpiresAt: grant.expiresAt, lease: lease, config: config, key: key)
    }

    func offlineDeactivate(_ body: OfflineDeactivateRequest, product: Product) async throws -> DeactivateResponse {
        let key = try Field.licenseKey(body.license_key)
        let text = try Field.offlineFile(body.proof, "proof")
        try limitLicense(key)
        try await deactivate(keyHash: key.keyHash, proofText: text, product: product, change: InstanceChange(actor: .offline, how: .offlineProof))
        return DeactivateResponse()
    }

    /// Frees the seat a deactivation proof names, if the instance's device key signed it; a proof
    /// signed by any other key (or for an instance activated online, which has none) is 422
    /// `INVALID_PROOF` and changes nothing. Freeing a seat already free is not an error.
    @discardableResult
    func deactivate(keyHash: String, proofText: String, product: Product, change: InstanceChange) async throws -> String {
        let proof: OfflineDeactivationProof
        do {
            proof = try OfflineDeactivationProof(armored: proofText)
        } catch {
            throw APIError.invalidRequest("The deactivation proof is malformed: \(error.description)")
        }
        let outcome = try await database.deactivate(
            keyHash: keyHash, licenseId: nil, tenantId: product.tenantId, productId: product.id, instanceId: proof.instanceId,
            now: clock.unixSeconds, change: change,
            proof: { instance in
                guard let text = instance.deviceKey, let raw = Base64.decode(text),
                      let deviceKey = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else { return false }
                return proof.isSigned(by: deviceKey)
            }
        )
        switch outcome {
        case .licenseNotFound: throw try await unknownKey(keyHash, product: product)
        case .instanceNotFound: throw APIError.notFound("Instance")
        case .invalidProof: throw APIError.invalidProof
        case .deactivated, .alreadyInactive: return proof.instanceId
        }
    }
}
