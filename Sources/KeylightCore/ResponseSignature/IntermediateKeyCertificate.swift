import Crypto

/// An intermediate key's public half, its expiry and the root key's signature over both:
/// the first 100 bytes of every response signature.
public struct IntermediateKeyCertificate: Hashable, Sendable {
    /// Raw 32-byte Ed25519 public key.
    public let publicKey: [UInt8]
    /// Last valid day, in whole days since 1970-01-01 (UTC).
    public let expiryDay: UInt32
    /// Root (keyset) key's 64-byte signature over ``signedBytes``.
    public let rootSignature: [UInt8]

    package init(publicKey: [UInt8], expiryDay: UInt32, rootSignature: [UInt8]) {
        self.publicKey = publicKey
        self.expiryDay = expiryDay
        self.rootSignature = rootSignature
    }

    /// Parses the 100-byte certificate at the start of `bytes`.
    package init(bytes: some RandomAccessCollection<UInt8>) {
        typealias Layout = ResponseSignatureLayout.Component
        let array = Array(bytes)
        publicKey = Array(array[Layout.intermediatePublicKey.range])
        expiryDay = array[Layout.intermediateExpiry.range].reversed().reduce(0) { $0 << 8 | UInt32($1) }
        rootSignature = Array(array[Layout.rootSignature.range])
    }

    /// What the root key signs: `expiry (UInt32 LE) ‖ intermediate public key`.
    public var signedBytes: [UInt8] {
        Self.signedBytes(publicKey: publicKey, expiryDay: expiryDay)
    }

    /// The 100 bytes as laid out in the signature blob.
    public var bytes: [UInt8] {
        publicKey + Self.littleEndian(expiryDay) + rootSignature
    }

    package static func signedBytes(publicKey: [UInt8], expiryDay: UInt32) -> [UInt8] {
        littleEndian(expiryDay) + publicKey
    }

    static func littleEndian(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
    }
}

/// Whole days since 1970-01-01 UTC for Unix seconds `now` (rounded down, for any Int64: a
/// clock set to an absurd time must not trap).
public func keylightDay(_ now: Int64) -> Int64 {
    now >= 0 ? now / 86_400 : -((-(now + 1)) / 86_400) - 1
}
