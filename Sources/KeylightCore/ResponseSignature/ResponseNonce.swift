/// The 12 random bytes a client sends in `X-Keylight-Nonce` to ask for a signed response.
public struct ResponseNonce: Hashable, Sendable {
    /// The raw 12 bytes.
    public let bytes: [UInt8]

    /// A fresh nonce from `generator`, which must be cryptographically secure in production.
    public init(using generator: inout some RandomNumberGenerator) {
        bytes = generator.bytes(ResponseSignatureLayout.nonceSize)
    }

    /// A fresh nonce from the system CSPRNG.
    public init() {
        var generator = SystemRandomNumberGenerator()
        self.init(using: &generator)
    }

    /// Parses a header value; nil unless it is base64 of exactly 12 bytes.
    public init?(header: String) {
        guard header.utf8.count <= 24, let raw = Base64.decode(header),
              raw.count == ResponseSignatureLayout.nonceSize else { return nil }
        bytes = Array(raw)
    }

    /// The header value (standard base64).
    public var header: String { Base64.encode(bytes) }
}
