import Crypto
import Foundation
import KeylightCore

/// Encrypts secrets stored in the database (signing keys, Stripe secrets) with AES-256-GCM
/// under the server's master key, binding each to what it is (the associated data) so a sealed
/// value cannot be moved to another row.
public struct SecretSealer: Sendable {
    private let key: SymmetricKey

    public init(key: SymmetricKey) {
        self.key = key
    }

    /// A random master key, for in-memory databases that never outlive the process.
    public static func ephemeral() -> SecretSealer {
        SecretSealer(key: SymmetricKey(size: .bits256))
    }

    /// The master key from `KEYLIGHT_MASTER_KEY` (base64 of 32 bytes) when given, else from the
    /// file at `path`, created with mode 0600 on first start.
    public static func load(environmentValue: String?, path: String) throws -> SecretSealer {
        if let environmentValue {
            guard let raw = Base64.decode(environmentValue), raw.count == 32 else { throw SealerError.badMasterKey("KEYLIGHT_MASTER_KEY") }
            return SecretSealer(key: SymmetricKey(data: raw))
        }
        if let data = FileManager.default.contents(atPath: path) {
            let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let raw = Base64.decode(text), raw.count == 32 else { throw SealerError.badMasterKey(path) }
            if let mode = SecretFile.permissions(of: path), mode & 0o077 != 0 { throw SealerError.tooOpen(path, mode) }
            return SecretSealer(key: SymmetricKey(data: raw))
        }
        let key = SymmetricKey(size: .bits256)
        let text = key.withUnsafeBytes { Base64.encode(Array($0)) } + "\n"
        try SecretFile.write(Data(text.utf8), to: path)
        return SecretSealer(key: key)
    }

    /// A key for one `purpose` (HKDF-SHA256 of the master key, `purpose` as the info), for
    /// values the server signs rather than seals: a MAC made with it proves nothing for any other
    /// purpose, and the master key itself never signs anything. Every process sharing the master
    /// key derives the same key.
    func derivedKey(for purpose: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: key, info: Data(purpose.utf8), outputByteCount: 32)
    }

    /// Base64 of nonce ‖ ciphertext ‖ tag.
    public func seal(_ plaintext: some DataProtocol, context: String) throws -> String {
        let box = try AES.GCM.seal(plaintext, using: key, authenticating: Data(context.utf8))
        guard let combined = box.combined else { throw SealerError.sealFailed }
        return Base64.encode(combined)
    }

    public func open(_ sealed: String, context: String) throws -> Data {
        guard let combined = Base64.decode(sealed), let box = try? AES.GCM.SealedBox(combined: combined) else {
            throw SealerError.cannotOpen(context)
        }
        do {
            return try AES.GCM.open(box, using: key, authenticating: Data(context.utf8))
        } catch {
            throw SealerError.cannotOpen(context)
        }
    }
}

public struct SealerError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String
    static func badMasterKey(_ source: String) -> Self { Self(description: "\(source): master key must be base64 of 32 bytes") }
    static func tooOpen(_ path: String, _ mode: Int) -> Self {
        Self(description: "\(path): master key file is readable by others (mode \(String(mode, radix: 8))); chmod 600 it")
    }
    static let sealFailed = Self(description: "could not seal a secret")
    static func cannotOpen(_ context: String) -> Self {
        Self(description: "cannot decrypt \(context): wrong master key or tampered data")
    }
}
