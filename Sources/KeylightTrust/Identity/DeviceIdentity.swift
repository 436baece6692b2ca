import Crypto
import Foundation
import Keylight
import KeylightCore

/// This device in the trust network: a stable id, a name people recognise, and an Ed25519
/// identity key that never leaves the device's secure store.
public struct DeviceIdentity: Sendable {
    public let deviceId: String
    public let name: String
    let signingKey: Curve25519.Signing.PrivateKey

    public var publicKey: Curve25519.Signing.PublicKey { signingKey.publicKey }

    static let storeKey = "keylight.trust.identity"

    private struct Stored: Codable {
        var device_id: String
        var name: String
        var private_key: String
    }

    /// The identity in `store`, created (and saved) on first use. A later `name` renames it.
    public static func loadOrCreate(in store: any SecureStore, name: String) throws(TrustError) -> DeviceIdentity {
        let cleanName = String(name.prefix(64))
        do {
            if let data = try store.data(for: storeKey) {
                let stored = try JSONDecoder().decode(Stored.self, from: data)
                guard let raw = Base64.decode(stored.private_key) else { throw TrustError.storage }
                let identity = DeviceIdentity(deviceId: stored.device_id, name: cleanName, signingKey: try .init(rawRepresentation: raw))
                if stored.name != cleanName { try identity.save(in: store) }
                return identity
            }
            let identity = DeviceIdentity(deviceId: UUID().uuidString.lowercased(), name: cleanName, signingKey: .init())
            try identity.save(in: store)
            return identity
        } catch let error as TrustError {
            throw error
        } catch {
            throw .storage
        }
    }

    private func save(in store: any SecureStore) throws {
        let stored = Stored(device_id: deviceId, name: name, private_key: Base64.encode(signingKey.rawRepresentation))
        try store.set(try JSONEncoder().encode(stored), for: Self.storeKey)
    }

    func sign(_ transcript: [UInt8]) throws -> [UInt8] {
        Array(try signingKey.signature(for: transcript))
    }
}
