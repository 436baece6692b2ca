import Crypto
import Foundation
import KeylightCore
import KeylightSigning

/// Paddle Billing's webhook signature: `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=<hex>…]`, each
/// `h1` an HMAC-SHA256 of `"<ts>:<raw body>"` keyed with the UTF-8 bytes of the whole
/// notification secret (`pdl_ntfset_…`). Several `h1` entries appear while Paddle rotates a secret.
enum PaddleSignature {
    /// The header for `body` signed at `timestamp` (what Paddle sends; used by tests and tools).
    static func header(timestamp: Int64, body: some Collection<UInt8>, secret: String) -> String {
        "ts=\(timestamp);h1=\(Hex.encode(sign(timestamp: timestamp, body: body, secret: secret)))"
    }

    /// True when some `h1` matches (compared in constant time) and `ts` is within `tolerance`
    /// seconds of `now`. Paddle's own parser trims nothing; neither does this one.
    static func isValid(header: String?, body: some Collection<UInt8>, secret: String, now: Int64, tolerance: Int64) -> Bool {
        guard let header, header.utf8.count <= 4_096 else { return false }
        var timestamp: Int64?
        var signatures: [[UInt8]] = []
        for part in header.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { return false }
            switch pair[0] {
            case "ts":
                guard timestamp == nil, let value = Int64(pair[1]) else { return false }
                timestamp = value
            case "h1":
                if let bytes = Hex.decode(String(pair[1])), bytes.count == 32 { signatures.append(bytes) }
            default:
                return false
            }
        }
        guard let timestamp, !signatures.isEmpty, WebhookSignature.isWithin(tolerance, timestamp, of: now) else { return false }
        let expected = Array(sign(timestamp: timestamp, body: body, secret: secret))
        var matched = false
        for signature in signatures where ConstantTime.equals(signature, expected) { matched = true }
        return matched
    }

    static func sign(timestamp: Int64, body: some Collection<UInt8>, secret: String) -> HashedAuthenticationCode<SHA256> {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: Data(secret.utf8)))
        hmac.update(data: Data("\(timestamp):".utf8))
        hmac.update(data: Data(body))
        return hmac.finalize()
    }
}
