import Foundation

/// A product's trial and free-tier settings, which apps trust only once signed (cfg1).
public struct ProductConfig: Hashable, Sendable {
    public var tenantId: String
    public var productId: String
    public var trialDurationDays: Int
    public var freeTierEnabled: Bool
    /// Unix seconds.
    public var issuedAt: Int64
    /// Unix seconds.
    public var expiresAt: Int64

    public init(
        tenantId: String,
        productId: String,
        trialDurationDays: Int,
        freeTierEnabled: Bool,
        issuedAt: Int64,
        expiresAt: Int64
    ) {
        self.tenantId = tenantId
        self.productId = productId
        self.trialDurationDays = trialDurationDays
        self.freeTierEnabled = freeTierEnabled
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }

    /// `cfg1|<kid>|<tenantId>|<productId>|<issuedAt>|<expiresAt>|<trialDays>|<true|false>`.
    public func signedPayload(kid: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(96 + tenantId.utf8.count + productId.utf8.count)
        bytes.appendField("cfg1")
        bytes.appendField(kid)
        bytes.appendField(tenantId)
        bytes.appendField(productId)
        bytes.appendDecimal(issuedAt)
        bytes.append(UInt8(ascii: "|"))
        bytes.appendDecimal(expiresAt)
        bytes.append(UInt8(ascii: "|"))
        bytes.appendDecimal(Int64(trialDurationDays))
        bytes.append(UInt8(ascii: "|"))
        bytes.append(contentsOf: (freeTierEnabled ? "true" : "false").utf8)
        return bytes
    }
}

/// A signed product config as it travels: the body of `GET config` and the `config` field of
/// `validate` and `keyless`. Tenant and product are not on the wire; the verifier supplies the
/// ones it asked for, so a config for another product never verifies.
public struct SignedProductConfig: Codable, Hashable, Sendable {
    public var trialDurationDays: Int
    public var freeTierEnabled: Bool
    public var issuedAt: Int64
    public var expiresAt: Int64
    public var kid: String
    public var signature: String

    public init(trialDurationDays: Int, freeTierEnabled: Bool, issuedAt: Int64, expiresAt: Int64, kid: String, signature: String) {
        self.trialDurationDays = trialDurationDays
        self.freeTierEnabled = freeTierEnabled
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.kid = kid
        self.signature = signature
    }

    enum CodingKeys: String, CodingKey {
        case trialDurationDays = "trial_duration_days"
        case freeTierEnabled = "free_tier_enabled"
        case issuedAt = "issued_at"
        case expiresAt = "expires_at"
        case kid, signature
    }

    /// The config for `tenantId`/`productId` that this claims to be.
    public func config(tenantId: String, productId: String) -> ProductConfig {
        ProductConfig(
            tenantId: tenantId,
            productId: productId,
            trialDurationDays: trialDurationDays,
            freeTierEnabled: freeTierEnabled,
            issuedAt: issuedAt,
            expiresAt: expiresAt
        )
    }

    /// Verifies the signature for `tenantId`/`productId` against `keyset` at `now`; the same
    /// three facts as a lease, with the same skew.
    public func verify(tenantId: String, productId: String, with keyset: Keyset, now: Int64) -> LeaseVerification {
        let expired = Lease.isExpired(expiresAt: expiresAt, now: now)
        guard let publicKey = keyset[kid] else {
            return LeaseVerification(kidKnown: false, signatureValid: false, expired: expired)
        }
        let pipe = UInt8(ascii: "|")
        guard !tenantId.utf8.contains(pipe), !productId.utf8.contains(pipe), !kid.utf8.contains(pipe),
              let signatureBytes = Base64.decode(signature), signatureBytes.count == 64 else {
            return LeaseVerification(kidKnown: true, signatureValid: false, expired: expired)
        }
        let payload = config(tenantId: tenantId, productId: productId).signedPayload(kid: kid)
        return LeaseVerification(kidKnown: true, signatureValid: publicKey.isValidSignature(signatureBytes, for: payload), expired: expired)
    }
}
