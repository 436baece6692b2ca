import Crypto
import Foundation
import KeylightCore

/// The token in a download link: HMAC-SHA256 under a key derived from the master key (every
/// process of an installation shares it), over the artifact, the device it was given to and its
/// expiry. A copied link stops working at the expiry unless the device's lease comes with it,
/// and never works for another device's lease.
struct DownloadToken: Sendable, Hashable {
    /// Unix seconds after which the link needs a lease beside it.
    var expiresAt: Int64
    /// The device (instance id) the feed was served to; `-` for a public feed without a lease.
    var instanceId: String

    static let anonymous = "-"

    /// What a token is bound to.
    struct Target: Sendable {
        var tenantId: String
        var productId: String
        var releaseId: String
        var platform: String
        var arch: String
    }

    /// `<expiry>.<instance>.<mac, base64url>`.
    func encoded(for target: Target, key: SymmetricKey) -> String {
        "\(expiresAt).\(instanceId).\(Self.mac(target, expiresAt: expiresAt, instanceId: instanceId, key: key))"
    }

    /// The token in `text` if its MAC is right for `target` (compared in constant time); nil otherwise.
    static func verify(_ text: String, for target: Target, key: SymmetricKey) -> DownloadToken? {
        guard text.utf8.count <= 200 else { return nil }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let expiresAt = Int64(parts[0]), parts[1].utf8.count <= 64,
              parts[1].utf8.allSatisfy({ $0 == 0x2D || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x5F }),
              let given = Base64URL.decode(parts[2]) else { return nil }
        let instanceId = String(parts[1])
        guard given.count == SHA256.byteCount,
              HMAC<SHA256>.isValidAuthenticationCode(given, authenticating: payload(target, expiresAt: expiresAt, instanceId: instanceId), using: key) else {
            return nil
        }
        return DownloadToken(expiresAt: expiresAt, instanceId: instanceId)
    }

    private static func payload(_ target: Target, expiresAt: Int64, instanceId: String) -> Data {
        Data("keylight.download.v1|\(target.tenantId)|\(target.productId)|\(target.releaseId)|\(target.platform)|\(target.arch)|\(expiresAt)|\(instanceId)".utf8)
    }

    private static func mac(_ target: Target, expiresAt: Int64, instanceId: String, key: SymmetricKey) -> String {
        Base64.encodeURLSafe(Array(HMAC<SHA256>.authenticationCode(for: payload(target, expiresAt: expiresAt, instanceId: instanceId), using: key)))
    }
}
