import Crypto
import Foundation
import KeylightCore
import KeylightSigning

/// Standard Webhooks (standardwebhooks.com), as Polar sends them: `webhook-id`,
/// `webhook-timestamp` (Unix seconds) and `webhook-signature`, a space-separated list of
/// `v1,<base64 HMAC-SHA256>` over `"<id>.<timestamp>.<raw body>"`.
///
/// The key: the specification's secret is `whsec_` + base64 of the key bytes, and Polar signs
/// that way for endpoints made since September 2026; older Polar endpoints sign with the UTF-8
/// bytes of the whole secret string, `whsec_` included. Both keys are tried, as Polar's own SDK does.
enum StandardWebhookSignature {
    /// The keys a secret may stand for, the literal one first.
    static func keys(secret: String) -> [SymmetricKey] {
        var keys = [SymmetricKey(data: Data(secret.utf8))]
        if secret.hasPrefix("whsec_") {
            var encoded = String(secret.dropFirst("whsec_".count))
            while encoded.utf8.count % 4 != 0 { encoded += "=" }
            if let decoded = Data(base64Encoded: encoded), !decoded.isEmpty { keys.append(SymmetricKey(data: decoded)) }
        }
        return keys
    }

    static func signature(id: String, timestamp: Int64, body: some Collection<UInt8>, key: SymmetricKey) -> String {
        "v1," + Data(mac(id: id, timestamp: timestamp, body: body, key: key)).base64EncodedString()
    }

    /// True when the id and timestamp are present and plausible, the timestamp is within
    /// `tolerance` seconds of `now`, and some `v1` entry matches under some key (all compared
    /// in constant time, every one of them).
    static func isValid(id: String?, timestamp: String?, signatures header: String?, body: some Collection<UInt8>, secret: String, now: Int64, tolerance: Int64) -> Bool {
        guard let id, !id.isEmpty, id.utf8.count <= 255, let timestamp, timestamp.utf8.count <= 20, let seconds = Int64(timestamp),
              let header, header.utf8.count <= 4_096, WebhookSignature.isWithin(tolerance, seconds, of: now) else { return false }
        let given: [[UInt8]] = header.split(separator: " ").compactMap { entry in
            let parts = entry.split(separator: ",", maxSplits: 1)
            guard parts.count == 2, parts[0] == "v1", let bytes = Data(base64Encoded: String(parts[1])), bytes.count == 32 else { return nil }
            return Array(bytes)
        }
        guard !given.isEmpty else { return false }
        var matched = false
        for key in keys(secret: secret) {
            let expected = Array(mac(id: id, timestamp: seconds, body: body, key: key))
            for signature in given where ConstantTime.equals(signature, expected) { matched = true }
        }
        return matched
    }

    private static func mac(id: String, timestamp: Int64, body: some Collection<UInt8>, key: SymmetricKey) -> HashedAuthenticationCode<SHA256> {
        var hmac = HMAC<SHA256>(key: key)
        hmac.update(data: Data("\(id).\(timestamp).".utf8))
        hmac.update(data: Data(body))
        return hmac.finalize()
    }
}
