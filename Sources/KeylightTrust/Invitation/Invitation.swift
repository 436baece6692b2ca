import Crypto
import Foundation
import KeylightCore

/// An offer to pair, shown as a link or QR code: `<scheme>://trust/<base64url JSON>`. It names
/// the inviting device and its identity key and carries a one-time 32-byte secret, so only
/// someone who saw it can pair, and only once.
public struct Invitation: Sendable, Hashable {
    public static let currentVersion = 1

    public let id: String
    public let deviceId: String
    public let name: String
    public let publicKey: Curve25519.Signing.PublicKey
    /// 32 random bytes.
    public let secret: [UInt8]
    /// Unix seconds.
    public let expiresAt: Int64

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.id == rhs.id && lhs.secret == rhs.secret }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    private struct Wire: Codable {
        var v: Int
        var id: String
        var device_id: String
        var name: String
        var key: String
        var secret: String
        var exp: Int64
    }

    /// A new invitation from `identity`, valid for `lifetime` seconds.
    public init(from identity: DeviceIdentity, now: Int64, lifetime: Int64 = 600, random: inout some RandomNumberGenerator) {
        id = Base64.encodeURLSafe((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &random) })
        deviceId = identity.deviceId
        name = identity.name
        publicKey = identity.publicKey
        secret = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &random) }
        expiresAt = now + lifetime
    }

    private init(wire: Wire, key: Curve25519.Signing.PublicKey, secret: [UInt8]) {
        id = wire.id
        deviceId = wire.device_id
        name = wire.name
        publicKey = key
        self.secret = secret
        expiresAt = wire.exp
    }

    /// `<scheme>://trust/<base64url of the JSON>`.
    public func url(scheme: String = "keylight") -> String {
        let wire = Wire(v: Self.currentVersion, id: id, device_id: deviceId, name: name, key: Base64.encode(publicKey.rawRepresentation),
                        secret: Base64.encodeURLSafe(secret), exp: expiresAt)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return "\(scheme)://trust/" + Base64.encodeURLSafe((try? encoder.encode(wire)) ?? Data())
    }

    /// Reads an invitation link: malformed, foreign, old or newer-format and expired links are
    /// refused with the matching ``TrustError``.
    public static func parse(_ text: String, scheme: String = "keylight", now: Int64) throws(TrustError) -> Invitation {
        let link = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard link.utf8.count <= 4_096, let separator = link.range(of: "://") else { throw .malformedInvitation }
        guard link[..<separator.lowerBound].lowercased() == scheme.lowercased() else { throw .wrongScheme(scheme) }
        let rest = link[separator.upperBound...]
        guard rest.hasPrefix("trust/"), let json = Base64.decode(rest.dropFirst("trust/".count)) else { throw .malformedInvitation }
        // The version first, so a newer format is reported as such rather than as garbage.
        guard let object = try? JSONSerialization.jsonObject(with: json) as? [String: Any], let version = object["v"] as? Int else {
            throw .malformedInvitation
        }
        guard version == currentVersion else { throw .unsupportedVersion(version) }
        guard let wire = try? JSONDecoder().decode(Wire.self, from: json),
              !wire.id.isEmpty, wire.id.utf8.count <= 64, !wire.device_id.isEmpty, wire.device_id.utf8.count <= 64, wire.name.utf8.count <= 256,
              let keyBytes = Base64.decode(wire.key), let key = try? Curve25519.Signing.PublicKey(rawRepresentation: keyBytes),
              let secret = Base64.decode(wire.secret), secret.count == 32 else {
            throw .malformedInvitation
        }
        guard wire.exp > now else { throw .expiredInvitation }
        return Invitation(wire: wire, key: key, secret: Array(secret))
    }
}
