import Crypto
import Foundation
import KeylightCore

/// The timestamped HMAC scheme Stripe signs webhooks with, and Keylight signs its own outbound
/// webhooks with: a header `t=<unix>,v1=<hex>[,v1=<hex>…]`, each `v1` an HMAC-SHA256 of
/// `"<t>.<raw body>"` under the endpoint's secret.
///
/// Receivers check the raw body before parsing it; several `v1` entries let a sender sign with
/// an old and a new secret while the receiver rotates.
public enum WebhookSignature {
    /// How far `t` may be from the receiver's clock, in seconds (Stripe's default).
    public static let defaultTolerance: Int64 = 300

    /// The header value for `body` signed at `timestamp`.
    public static func header(timestamp: Int64, body: some Collection<UInt8>, secret: String) -> String {
        "t=\(timestamp),v1=\(Hex.encode(sign(timestamp: timestamp, body: body, secret: secret)))"
    }

    /// True when some `v1` entry matches (compared in constant time) and `t` is within
    /// `tolerance` seconds of `now`.
    public static func isValid(
        header: String?, body: some Collection<UInt8>, secret: String, now: Int64, tolerance: Int64 = defaultTolerance
    ) -> Bool {
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
        guard let timestamp, !signatures.isEmpty, isWithin(tolerance, timestamp, of: now) else { return false }
        let expected = Array(sign(timestamp: timestamp, body: body, secret: secret))
        // Compare against every entry so the time taken does not say which one matched.
        var matched = false
        for signature in signatures where ConstantTime.equals(signature, expected) { matched = true }
        return matched
    }

    /// `|now - timestamp| <= tolerance` without overflow: `t` is attacker-chosen and may be any
    /// Int64, so the difference is taken only where it cannot leave the Int64 range.
    public static func isWithin(_ tolerance: Int64, _ timestamp: Int64, of now: Int64) -> Bool {
        guard tolerance >= 0 else { return false }
        let (difference, overflow) = now.subtractingReportingOverflow(timestamp)
        guard !overflow, difference != .min else { return false }
        return abs(difference) <= tolerance
    }

    /// The `v1` HMAC for `timestamp` and `body`.
    public static func sign(timestamp: Int64, body: some Collection<UInt8>, secret: String) -> HashedAuthenticationCode<SHA256> {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: Data(secret.utf8)))
        hmac.update(data: Data("\(timestamp).".utf8))
        hmac.update(data: Data(body))
        return hmac.finalize()
    }
}
