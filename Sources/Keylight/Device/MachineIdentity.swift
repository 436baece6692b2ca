import Crypto
import Foundation
import KeylightCore

/// The stable identity of this installation, so re-activating on the same machine uses no new
/// slot. The server only sees a per-product hash, never the raw id.
enum MachineIdentity {
    /// SHA-256 of the product and a random device id kept in the secure store (created on first
    /// use, so it survives reinstalls as long as the store does).
    static func hash(productKey: String, store: any SecureStore) throws -> String {
        let id: Data
        if let existing = try store.data(for: "device-id") {
            id = existing
        } else {
            var generator = SystemRandomNumberGenerator()
            id = Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
            try store.set(id, for: "device-id")
        }
        return Hex.encode(SHA256.hash(data: Data(productKey.utf8) + id))
    }
}
