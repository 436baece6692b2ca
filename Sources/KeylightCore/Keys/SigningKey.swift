import Crypto
import Foundation

/// An Ed25519 private key with its key id (`kid`), the unit of signing for leases, product
/// configs and intermediate response-signing keys.
///
/// Neither `description` nor `dump` shows the private key.
public struct SigningKey: Sendable, CustomStringConvertible, CustomReflectable {
    /// The key id that names this key in leases and keysets.
    public let kid: String
    /// The private key.
    public let privateKey: Curve25519.Signing.PrivateKey

    public init(kid: String, privateKey: Curve25519.Signing.PrivateKey) throws(KeyError) {
        guard Self.isValidKid(kid) else { throw .invalidKid }
        self.kid = kid
        self.privateKey = privateKey
    }

    /// A new key from the system CSPRNG; `kid` defaults to one derived from the public key.
    public static func generate(kid: String? = nil) throws(KeyError) -> SigningKey {
        let privateKey = Curve25519.Signing.PrivateKey()
        return try SigningKey(kid: kid ?? defaultKid(for: privateKey.publicKey), privateKey: privateKey)
    }

    /// The public half.
    public var publicKey: Curve25519.Signing.PublicKey { privateKey.publicKey }

    /// Ed25519 signature (64 bytes) over `bytes`.
    public func signature(for bytes: some DataProtocol) -> Data {
        // Curve25519 signing only throws on an internal BoringSSL failure; treat it as fatal
        // rather than leak `throws` into every signing API.
        do { return try privateKey.signature(for: bytes) } catch { fatalError("Ed25519 signing failed: \(error)") }
    }

    /// `k` + the first 10 hex characters of SHA-256 of the public key: stable, collision-free in
    /// practice, and safe for several processes to create without coordinating a counter.
    public static func defaultKid(for publicKey: Curve25519.Signing.PublicKey) -> String {
        "k" + Hex.encode(SHA256.hash(data: publicKey.rawRepresentation)).prefix(10)
    }

    /// Kids travel inside `|`-separated signed payloads and HTTP headers: 1 to 64 characters of
    /// `A-Z a-z 0-9 . _ -`.
    public static func isValidKid(_ kid: String) -> Bool {
        let bytes = Array(kid.utf8)
        return (1...64).contains(bytes.count) && bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
    }

    public var description: String { "SigningKey(kid: \(kid))" }
    public var customMirror: Mirror { Mirror(self, children: ["kid": kid]) }
}

extension SigningKey {
    /// The key file format: `{"kid","private_key","public_key"}`, raw 32-byte keys in base64.
    struct FileContents: Codable {
        var kid: String
        var private_key: String
        var public_key: String
    }

    /// JSON of the key file. Holds the private key: write it only through ``write(to:overwrite:)``.
    public func fileJSON() -> Data {
        let contents = FileContents(
            kid: kid,
            private_key: Base64.encode(privateKey.rawRepresentation),
            public_key: Base64.encode(publicKey.rawRepresentation)
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Encoding three strings cannot fail.
        return (try? encoder.encode(contents)) ?? Data()
    }

    /// Parses a key file, checking that its public key matches its private key.
    public init(fileJSON data: Data) throws(KeyError) {
        guard let contents = try? JSONDecoder().decode(FileContents.self, from: data) else { throw .malformedKeyFile }
        guard let raw = Base64.decode(contents.private_key), raw.count == 32,
              let privateKey = try? Curve25519.Signing.PrivateKey(rawRepresentation: raw) else {
            throw .malformedKeyFile
        }
        guard Base64.decode(contents.public_key) == privateKey.publicKey.rawRepresentation else {
            throw .publicKeyMismatch
        }
        try self.init(kid: contents.kid, privateKey: privateKey)
    }

    /// Reads a key file.
    public static func load(from path: String) throws(KeyError) -> SigningKey {
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadable(path) }
        return try SigningKey(fileJSON: data)
    }

    /// Writes the key file with mode 0600.
    public func write(to path: String, overwrite: Bool = false) throws(SecretFileError) {
        try SecretFile.write(fileJSON(), to: path, overwrite: overwrite)
    }
}

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
