/// The 180-byte `X-Keylight-Signature` blob, as a size/offset table.
///
/// | bytes      | field |
/// |------------|-------|
/// | 0..<32     | intermediate Ed25519 public key |
/// | 32..<36    | intermediate key expiry, UInt32 little-endian, days since 1970-01-01 |
/// | 36..<100   | root signature over `expiry(4) ‖ intermediate key(32)` |
/// | 100..<116  | random salt |
/// | 116..<180  | intermediate key's signature over the message |
public enum ResponseSignatureLayout {
    /// One field of the blob, in order.
    public enum Component: Int, CaseIterable, Sendable {
        case intermediatePublicKey
        case intermediateExpiry
        case rootSignature
        case salt
        case messageSignature

        /// Length in bytes.
        public var size: Int {
            switch self {
            case .intermediatePublicKey: 32
            case .intermediateExpiry: 4
            case .rootSignature: 64
            case .salt: 16
            case .messageSignature: 64
            }
        }

        /// Offset from the start of the blob: the sum of the sizes before it.
        public var offset: Int {
            Self.allCases.prefix(while: { $0 != self }).reduce(0) { $0 + $1.size }
        }

        /// Byte range in the blob.
        public var range: Range<Int> { offset..<(offset + size) }
    }

    /// The intermediate key's certificate (public key, expiry, root signature) comes first.
    public static let certificateRange = Component.intermediatePublicKey.offset..<Component.rootSignature.range.upperBound

    /// 180 bytes.
    public static let totalSize = Component.allCases.reduce(0) { $0 + $1.size }

    /// Length of `X-Keylight-Nonce` in raw bytes.
    public static let nonceSize = 12
}
