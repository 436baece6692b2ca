import Crypto
import Foundation
import KeylightCore

/// Stripe's webhook signature: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]`, each `v1` an
/// HMAC-SHA256 of `"<t>.<raw body>"` under the endpoint's secret. The raw body is checked
/// before anything parses it.
enum StripeSignature {
    static let tolerance: Int64 = 300

    /// True when some `v1` matches (compared in constant time) and `t` is within the tolerance of `now`.
    static func isValid(header: String?, body: some Collection<UInt8>, secret: String, now: Int64) -> Bool {
        guard let header, header.utf8.count <= 4_096 else { return false }
        var timestamp: Int64?
        var signatures: [[UInt8]] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            switch pair[0] {
            case "t": timestamp = Int64(pair[1])
            case "v1": if let bytes = Hex.decode(pair[1]), bytes.count == 32 { signatures.append(bytes) }
            default: continue  // v0 and future schemes are ignored, as Stripe advises
            }
        }
        guard let timestamp, abs(now - timestamp) <= tolerance, !signatures.isEmpty else { return false }
        let expected = Array(sign(timestamp: timestamp, body: body, secret: secret))
        var matched = false
        for signature in signatures where ConstantTime.equals(signature, expected) { matched = true }
        return matched
    }

    /// The `v1` HMAC for `timestamp` and `body` (also what tests sign fixtures with).
    static func sign(timestamp: Int64, body: some Collection<UInt8>, secret: String) -> HashedAuthenticationCode<SHA256> {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: Data(secret.utf8)))
        hmac.update(data: Data("\(timestamp).".utf8))
        hmac.update(data: Data(body))
        return hmac.finalize()
    }
}
