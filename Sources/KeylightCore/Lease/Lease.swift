/// A lease (v3): the server's signed statement that one instance of a license may run until
/// `expiresAt`. Apps verify it offline against the keyset they embed.
///
/// The JSON form has exactly the fields below, named as here.
public struct Lease: Codable, Hashable, Sendable {
    /// What the lease grants.
    public enum Status: String, Codable, Sendable, CaseIterable {
        /// A current license: full access with the key type's entitlements.
        case active
        /// A lapsed license whose key type keeps fallback access: limited access, no entitlements.
        case fallback
        /// A lapsed license without fallback access.
        case expired
    }

    /// Key id of the signing key.
    public var kid: String
    /// `keyHash` of the license key.
    public var licenseKeyHash: String
    /// The instance the lease was issued to.
    public var instanceId: String
    /// Unix seconds.
    public var issuedAt: Int64
    /// Unix seconds.
    public var expiresAt: Int64
    public var status: Status
    /// Ed25519 signature over ``signedPayload``, base64.
    public var signature: String
    /// Entitlement codes granted.
    public var entitlements: [String]

    public init(
        kid: String,
        licenseKeyHash: String,
        instanceId: String,
        issuedAt: Int64,
        expiresAt: Int64,
        status: Status,
        signature: String,
        entitlements: [String]
    ) {
        self.kid = kid
        self.licenseKeyHash = licenseKeyHash
        self.instanceId = instanceId
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.status = status
        self.signature = signature
        self.entitlements = entitlements
    }
}
