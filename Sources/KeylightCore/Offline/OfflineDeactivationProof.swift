import Crypto
import Foundation

/// The proof an offline device shows when it gives its seat back (protocol 6.4): its device key's
/// signature over `kl-deactivate|<instance_id>|<issued_at>`. Only the device that asked for the
/// activation holds that key, so nobody else can free its seat by this route.
public struct OfflineDeactivationProof: Hashable, Sendable {
    public static let label = "KEYLIGHT DEACTIVATION"

    public var instanceId: String
    public var issuedAt: Int64
    /// The 64-byte Ed25519 signature.
    public var signature: Data

    public init(instanceId: String, issuedAt: Int64, signature: Data) {
        self.instanceId = instanceId
        self.issuedAt = issuedAt
        self.signature = signature
    }

    /// Signs a proof for `instanceId` with the device key.
    public static func sign(instanceId: String, issuedAt: Int64, with deviceKey: Curve25519.Signing.PrivateKey) throws -> Self {
        Self(instanceId: instanceId, issuedAt: issuedAt, signature: try deviceKey.signature(for: signedMessage(instanceId: instanceId, issuedAt: issuedAt)))
    }

    /// The UTF-8 bytes the device key signs.
    public static func signedMessage(instanceId: String, issuedAt: Int64) -> Data {
        Data("kl-deactivate|\(instanceId)|\(issuedAt)".utf8)
    }

    /// Whether the proof was signed by `deviceKey`.
    public func isSigned(by deviceKey: Curve25519.Signing.PublicKey) -> Bool {
        signature.count == 64 && deviceKey.isValidSignature(signature, for: Self.signedMessage(instanceId: instanceId, issuedAt: issuedAt))
    }

    private struct Wire: Codable {
        var v: Int
        var instance_id: String
        var issued_at: Int64
        var signature: String
    }

    /// The proof file's text.
    public var armored: String {
        ArmoredText.encode(OfflineFields.json(Wire(v: 1, instance_id: instanceId, issued_at: issuedAt, signature: Base64.encode(signature))), label: Self.label)
    }

    /// Parses a proof file (the signature is checked by ``isSigned(by:)``, against the key the
    /// instance was activated with).
    public init(armored text: some StringProtocol) throws(OfflineFileError) {
        let wire = try OfflineFields.decode(Wire.self, from: try ArmoredText.decode(text, label: Self.label))
        try OfflineFields.version(wire.v)
        instanceId = try OfflineFields.identifier(wire.instance_id, "instance_id")
        issuedAt = try OfflineFields.time(wire.issued_at, "issued_at")
        signature = try OfflineFields.signature(wire.signature, "signature")
    }
}
