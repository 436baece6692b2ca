import Crypto
import Foundation
import KeylightCore

/// A browser that signed in to an account: a cookie sealed under the master key, naming the
/// account and when. Sign-in attempts from it count on a throttle of their own, so failures
/// from anywhere else never slow the owner's own browser down (the "device cookie" defence
/// against lockout). Forged or stale cookies count as none.
enum DeviceCookie {
    static let name = "keylight_device"
    static let lifetime: Int64 = 180 * 86_400
    private static let sealContext = "dashboard-device"

    /// A new cookie value for `email`.
    static func make(email: String, now: Int64, sealer: SecretSealer) throws -> String {
        var random = SystemRandomNumberGenerator()
        let nonce = Hex.encode((0..<8).map { _ in UInt8.random(in: .min ... .max, using: &random) })
        return try sealer.seal(Data("\(email)|\(now)|\(nonce)".utf8), context: sealContext)
    }

    /// The throttle key of a cookie that is this browser's for `email` and not older than
    /// ``lifetime``; nil for anything else.
    static func throttleKey(_ value: String?, email: String, now: Int64, sealer: SecretSealer?) -> String? {
        guard let value, value.utf8.count <= 512, let sealer, let opened = try? sealer.open(value, context: sealContext) else { return nil }
        let parts = String(decoding: opened, as: UTF8.self).split(separator: "|", omittingEmptySubsequences: false)
        guard parts.count == 3, String(parts[0]) == email, let issued = Int64(parts[1]), now - issued <= lifetime, issued <= now else { return nil }
        return Hex.encode(SHA256.hash(data: Data(value.utf8)).prefix(16))
    }
}
