import Foundation

/// Why a key or keyset could not be used.
public struct KeyError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String

    public static let invalidKid = Self(description: "kid must be 1-64 characters of A-Z a-z 0-9 . _ -")
    public static let malformedKeyFile = Self(description: "key file is not {\"kid\",\"private_key\",\"public_key\"} with a base64 32-byte Ed25519 private key")
    public static let publicKeyMismatch = Self(description: "key file's public_key does not belong to its private_key")
    public static let malformedKeyset = Self(description: "keyset is neither {\"keys\":[{\"kid\",\"public_key\"}]} nor {\"<kid>\":\"<base64 public key>\"}")
    public static func invalidPublicKey(kid: String) -> Self {
        Self(description: "public key for kid \(kid) is not 32 bytes of base64")
    }
    public static func unreadable(_ path: String) -> Self { Self(description: "\(path): cannot be read") }
}
