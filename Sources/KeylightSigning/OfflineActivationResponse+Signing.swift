import Foundation
import KeylightCore

extension OfflineActivationResponse {
    /// Makes a response for `request`, signing the binding with `key` (the key that signed `lease`).
    public static func make(
        request: OfflineActivationRequest, instanceId: String, licenseExpiresAt: Int64?, lease: Lease, config: SignedProductConfig, key: SigningKey
    ) -> Self {
        let message = bindingMessage(kid: key.kid, instanceId: instanceId, machineHash: request.machineHash, deviceKey: request.deviceKeyBase64, leaseSignature: lease.signature)
        return Self(
            instanceId: instanceId, licenseExpiresAt: licenseExpiresAt, lease: lease, config: config,
            machineHash: request.machineHash, binding: Base64.encode(key.signature(for: message))
        )
    }
}
