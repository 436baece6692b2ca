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

/// Why a lease could not be signed or read.
public struct LeaseError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String

    public static let ambiguousField = Self(description: "lease fields must not contain '|', and entitlements must be non-empty and contain no ','")
    public static let expiresBeforeIssued = Self(description: "lease expiresAt is before issuedAt")
    public static let entitlementsWithoutActive = Self(description: "only active leases carry entitlements")
    public static let malformed = Self(description: "not a lease: expected {kid, licenseKeyHash, instanceId, issuedAt, expiresAt, status, signature, entitlements}")
}
