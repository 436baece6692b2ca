/// The three facts a lease verification yields.
public struct LeaseVerification: Hashable, Sendable, Codable {
    /// The lease's kid is in the trusted keyset.
    public var kidKnown: Bool
    /// The signature is valid for the payload under that key (false whenever `kidKnown` is).
    public var signatureValid: Bool
    /// `now > expiresAt + skew`.
    public var expired: Bool

    public init(kidKnown: Bool, signatureValid: Bool, expired: Bool) {
        self.kidKnown = kidKnown
        self.signatureValid = signatureValid
        self.expired = expired
    }

    /// Signed by a trusted key: what the lease says can be believed.
    public var isTrusted: Bool { kidKnown && signatureValid }

    /// Trusted and not expired.
    public var isCurrent: Bool { isTrusted && !expired }
}

extension Lease {
    /// Clock skew tolerated after `expiresAt`, in seconds.
    public static let expirySkew: Int64 = 300

    /// `now > expiresAt + skew`, where an `expiresAt` so large that adding the skew overflows never expires.
    static func isExpired(expiresAt: Int64, now: Int64, skew: Int64 = Lease.expirySkew) -> Bool {
        let (limit, overflow) = expiresAt.addingReportingOverflow(skew)
        return !overflow && now > limit
    }

    /// Verifies the lease against `keyset` at `now` (Unix seconds).
    ///
    /// Never throws: an undecodable signature or an ambiguous payload is simply not valid.
    public func verify(with keyset: Keyset, now: Int64, skew: Int64 = Lease.expirySkew) -> LeaseVerification {
        let expired = Self.isExpired(expiresAt: expiresAt, now: now, skew: skew)
        guard let publicKey = keyset[kid] else {
            return LeaseVerification(kidKnown: false, signatureValid: false, expired: expired)
        }
        guard hasUnambiguousPayload, let signatureBytes = Base64.decode(signature), signatureBytes.count == 64 else {
            return LeaseVerification(kidKnown: true, signatureValid: false, expired: expired)
        }
        let valid = publicKey.isValidSignature(signatureBytes, for: signedPayload)
        return LeaseVerification(kidKnown: true, signatureValid: valid, expired: expired)
    }
}
