import Crypto
import Foundation

/// Key ids (`kid`): how leases, configs, keysets and response signatures name a signing key.
public enum KeyID {
    /// `k` + the first 10 hex characters of SHA-256 of the public key: the id the server gives
    /// every key it makes, so an app that trusts a public key can name it the same way. Stable,
    /// collision-free in practice, and safe for several processes to derive without coordinating.
    public static func derived(from publicKey: Curve25519.Signing.PublicKey) -> String {
        "k" + Hex.encode(SHA256.hash(data: publicKey.rawRepresentation)).prefix(10)
    }

    /// Kids travel inside `|`-separated signed payloads and HTTP headers: 1 to 64 characters of
    /// `A-Z a-z 0-9 . _ -`.
    public static func isValid(_ kid: String) -> Bool {
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
}
