import Crypto

/// Verifies signed SDK responses against the keyset the app trusts.
public struct ResponseSignatureVerifier: Sendable {
    public var keyset: Keyset

    public init(keyset: Keyset) {
        self.keyset = keyset
    }

    /// Checks one response, in the order the protocol lists the checks, and throws the first
    /// that fails.
    ///
    /// - Parameters:
    ///   - signature: the `X-Keylight-Signature` header.
    ///   - kid: the `X-Keylight-Signature-Kid` header (the root key).
    ///   - requestTime: the `X-Keylight-Request-Time` header, exactly as received.
    ///   - nonce: the 12 raw bytes the client sent. A response signed for another nonce fails
    ///     the message signature, which is how replays are caught.
    ///   - path: the request path relative to the base URL, for example `/t1/p1/validate`.
    ///   - body: the response body bytes.
    ///   - now: Unix seconds.
    public func verify(
        signature: String,
        kid: String,
        requestTime: String,
        nonce: some Collection<UInt8>,
        path: String,
        body: some Collection<UInt8>,
        now: Int64
    ) throws(ResponseSignatureError) {
        let parsed = try ResponseSignature(header: signature)
        guard let root = keyset[kid] else { throw .unknownKid }
        let certificate = parsed.certificate
        guard root.isValidSignature(certificate.rootSignature, for: certificate.signedBytes) else { throw .badRootSignature }
        guard Int64(certificate.expiryDay) >= keylightDay(now) else { throw .intermediateExpired }
        guard let intermediate = try? Curve25519.Signing.PublicKey(rawRepresentation: certificate.publicKey) else {
            throw .badRootSignature
        }
        let message = ResponseSignature.message(
            salt: parsed.salt, nonce: nonce, path: path, requestTime: requestTime, body: body
        )
        guard intermediate.isValidSignature(parsed.messageSignature, for: message) else { throw .badMessageSignature }
    }
}

/// Which check of a response signature failed.
public struct ResponseSignatureError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Stable identifier, for logs and metrics.
    public let code: String
    public let description: String

    /// The signature is not base64 of exactly 180 bytes.
    public static let wrongLength = Self(code: "wrong_length", description: "response signature is not 180 bytes of base64")
    /// The root kid is not in the trusted keyset.
    public static let unknownKid = Self(code: "unknown_kid", description: "response signed under an unknown root kid")
    /// The root key did not sign this intermediate key and expiry.
    public static let badRootSignature = Self(code: "bad_root_signature", description: "intermediate key is not signed by the root key")
    /// The intermediate key's expiry day is before today.
    public static let intermediateExpired = Self(code: "intermediate_expired", description: "intermediate signing key has expired")
    /// The intermediate key did not sign this salt, nonce, path, time and body.
    public static let badMessageSignature = Self(code: "bad_message_signature", description: "response does not match its signature (tampered, or signed for another nonce)")
    /// A signed response was asked for and the signature headers are absent.
    public static let missingSignature = Self(code: "missing_signature", description: "response carries no signature headers")
}
