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

    /// `<expiry>.<instance>.<mac, base64url>`, with the key's HMAC set up once (``Signer``): a
    /// feed makes a link per build.
    func encoded(for target: Target, signer: Signer) -> String {
        let mac = signer.mac(Self.payload(target, expiresAt: expiresAt, instanceId: instanceId))
        return "\(expiresAt).\(instanceId).\(mac)"
    }

    /// An HMAC already keyed: copying it skips hashing the padded key for every link.
    struct Signer: Sendable {
        private let keyed: HMAC<SHA256>

        init(key: SymmetricKey) {
            keyed = HMAC<SHA256>(key: key)
        }

        func mac(_ payload: Data) -> String {
            var hmac = keyed
            hmac.update(data: payload)
            return hmac.finalize().withUnsafeBytes { DownloadToken.base64URL($0) }
        }
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

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Unpadded base64url, written directly: a feed makes a link per build, and Foundation's
    /// encoder plus three replacements cost more than the MAC itself.
    static func base64URL(_ bytes: UnsafeRawBufferPointer) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out += [alphabet[Int(value >> 18 & 63)], alphabet[Int(value >> 12 & 63)], alphabet[Int(value >> 6 & 63)], alphabet[Int(value & 63)]]
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            let value = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
            out += [alphabet[Int(value >> 18 & 63)], alphabet[Int(value >> 12 & 63)]]
            if rest == 2 { out.append(alphabet[Int(value >> 6 & 63)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
