import Crypto
import Foundation

/// This device's offline-activation key (protocol 6.4): made with the first request, kept in
/// the secure store, and the only key whose deactivation proofs free the seat that request took.
enum DeviceKey {
    static let storeKey = "offline-device-key"

    /// The kept key, or nil when this device never asked for an offline activation.
    static func existing(in store: any SecureStore) throws -> Curve25519.Signing.PrivateKey? {
        guard let raw = try store.data(for: storeKey) else { return nil }
        guard let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: raw) else {
            throw KeylightError.storage("the offline device key is unreadable")
        }
        return key
    }

    /// The kept key, made and stored first if there is none.
    static func load(from store: any SecureStore) throws -> Curve25519.Signing.PrivateKey {
        if let key = try existing(in: store) { return key }
        let key = Curve25519.Signing.PrivateKey()
        try store.set(key.rawRepresentation, for: storeKey)
        return key
    }
}
