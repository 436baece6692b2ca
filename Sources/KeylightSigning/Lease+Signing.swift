import Foundation
import KeylightCore

extension Lease {
    /// Signs a new lease with `key`. Entitlements are stored in canonical (sorted) order.
    ///
    /// Throws when a field could make the signed payload ambiguous: see ``LeaseError``.
    public static func sign(
        licenseKeyHash: String,
        instanceId: String,
        issuedAt: Int64,
        expiresAt: Int64,
        status: Status,
        entitlements: [String],
        with key: SigningKey
    ) throws(LeaseError) -> Lease {
        var lease = Lease(
            kid: key.kid,
            licenseKeyHash: licenseKeyHash,
            instanceId: instanceId,
            issuedAt: issuedAt,
            expiresAt: expiresAt,
            status: status,
            signature: "",
            entitlements: canonicalOrder(entitlements)
        )
        guard lease.hasUnambiguousPayload else { throw .ambiguousField }
        guard expiresAt >= issuedAt else { throw .expiresBeforeIssued }
        guard status == .active || entitlements.isEmpty else { throw .entitlementsWithoutActive }
        lease.signature = Base64.encode(key.signature(for: lease.signedPayload))
        return lease
    }
}
