import Crypto
import Foundation

/// The lifecycle of a signing key: `next` is published but signs nothing yet (apps ship it before
/// it is used), `active` signs, `grace` still verifies, `retired` does neither.
public enum SigningKeyStatus: String, Codable, Sendable, CaseIterable {
    case next, active, grace, retired
}

/// The set of public keys a verifier trusts, by kid.
public struct Keyset: Sendable {
    /// Trusted public keys by kid.
    public private(set) var keys: [String: Curve25519.Signing.PublicKey]

    public init(_ keys: [String: Curve25519.Signing.PublicKey] = [:]) {
        self.keys = keys
    }

    /// The key named `kid`, if trusted.
    public subscript(kid: String) -> Curve25519.Signing.PublicKey? {
        keys[kid]
    }

    /// Trusts `publicKey` under `kid`.
    public mutating func insert(kid: String, publicKey: Curve25519.Signing.PublicKey) {
        keys[kid] = publicKey
    }

    /// Parses either shape a keyset travels in: the server's public document
    /// (`{"keys":[{"kid","public_key","status"}]}`, where `retired` entries are not trusted) or
    /// a plain `{"<kid>":"<base64 public key>"}` map.
    public init(json data: Data) throws(KeyError) {
        if let document = try? JSONDecoder().decode(KeysetDocument.self, from: data) {
            self = try document.keyset()
            return
        }
        guard let map = try? JSONDecoder().decode([String: String].self, from: data) else { throw .malformedKeyset }
        var keys: [String: Curve25519.Signing.PublicKey] = [:]
        for (kid, text) in map {
            keys[kid] = try Self.publicKey(kid: kid, base64: text)
        }
        self.init(keys)
    }

    static func publicKey(kid: String, base64 text: String) throws(KeyError) -> Curve25519.Signing.PublicKey {
        guard let raw = Base64.decode(text), raw.count == 32,
              let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else {
            throw .invalidPublicKey(kid: kid)
        }
        return key
    }
}

/// A public keyset document: the server-wide `/.well-known/keylight-keys.json` (first revision)
/// or a tenant's `/{tenant}/.well-known/keylight-keys` (protocol 6.1, with `primary_kid`).
public struct KeysetDocument: Codable, Sendable, Hashable {
    public struct Entry: Codable, Sendable, Hashable {
        public var kid: String
        /// Always `ed25519` (the only algorithm); absent in documents from older servers.
        public var alg: String?
        public var publicKey: String
        public var status: SigningKeyStatus

        public init(kid: String, publicKey: Curve25519.Signing.PublicKey, status: SigningKeyStatus) {
            self.kid = kid
            self.alg = "ed25519"
            self.publicKey = Base64.encode(publicKey.rawRepresentation)
            self.status = status
        }

        enum CodingKeys: String, CodingKey {
            case kid, alg, publicKey = "public_key", status
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            kid = try container.decode(String.self, forKey: .kid)
            alg = try container.decodeIfPresent(String.self, forKey: .alg)
            publicKey = try container.decode(String.self, forKey: .publicKey)
            // Documents from older servers may omit status; an entry that is listed is trusted.
            status = try container.decodeIfPresent(SigningKeyStatus.self, forKey: .status) ?? .active
        }
    }

    /// The kid that signs now (tenant keysets only).
    public var primaryKid: String?
    public var keys: [Entry]

    public init(primaryKid: String? = nil, keys: [Entry]) {
        self.primaryKid = primaryKid
        self.keys = keys
    }

    enum CodingKeys: String, CodingKey {
        case primaryKid = "primary_kid", keys
    }

    /// The trusted keyset: every entry that is not retired (`next` included: an app built with it
    /// keeps verifying once the server rotates to it).
    public func keyset() throws(KeyError) -> Keyset {
        var keyset = Keyset()
        for entry in keys where entry.status != .retired {
            keyset.insert(kid: entry.kid, publicKey: try Keyset.publicKey(kid: entry.kid, base64: entry.publicKey))
        }
        return keyset
    }
}
