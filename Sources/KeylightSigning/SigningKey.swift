import Crypto
import Foundation
import KeylightCore

/// An Ed25519 private key with its key id (`kid`), the unit of signing for leases, product
/// configs and intermediate response-signing keys. Server side: apps verify, never sign, so this
/// module is not part of what `import Keylight` brings.
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

    /// The id the server gives a public key (``KeyID/derived(from:)``).
    public static func defaultKid(for publicKey: Curve25519.Signing.PublicKey) -> String {
        KeyID.derived(from: publicKey)
    }

    /// Whether `kid` can name a key (``KeyID/isValid(_:)``).
    public static func isValidKid(_ kid: String) -> Bool {
        KeyID.isValid(kid)
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
