import Crypto
import Foundation
import KeylightCore

/// Lemon Squeezy's webhook signature: `X-Signature`, the hex HMAC-SHA256 of the raw body keyed
/// with the UTF-8 bytes of the signing secret the merchant chose. It signs no time and no
/// delivery id, so replays are stopped by deduplication (see ``LemonSqueezyEvent``), not here.
enum LemonSqueezySignature {
    static func signature(body: some Collection<UInt8>, secret: String) -> String {
        Hex.encode(HMAC<SHA256>.authenticationCode(for: Data(body), using: SymmetricKey(data: Data(secret.utf8))))
    }

    static func isValid(header: String?, body: some Collection<UInt8>, secret: String) -> Bool {
        guard let header, header.utf8.count == 64, let given = Hex.decode(header.lowercased()), given.count == 32 else { return false }
        let expected = Array(HMAC<SHA256>.authenticationCode(for: Data(body), using: SymmetricKey(data: Data(secret.utf8))))
        return ConstantTime.equals(given, expected)
    }
}
