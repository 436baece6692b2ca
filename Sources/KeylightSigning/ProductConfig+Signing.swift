import Foundation
import KeylightCore

extension ProductConfig {
    /// Signs the config with `key`.
    public func signed(with key: SigningKey) -> SignedProductConfig {
        SignedProductConfig(
            trialDurationDays: trialDurationDays,
            freeTierEnabled: freeTierEnabled,
            issuedAt: issuedAt,
            expiresAt: expiresAt,
            kid: key.kid,
            signature: Base64.encode(key.signature(for: signedPayload(kid: key.kid)))
        )
    }
}
