import Crypto
import Foundation

/// The file the server makes from a request (protocol 6.4): an ordinary v3 lease and the signed
/// product config, for the device to import without ever reaching the server.
///
/// Keylight adds two fields the protocol's list does not name (clients that do not know them
/// ignore them): `machine_hash`, the machine the request came from, and `binding`, the signing
/// key's signature over ``bindingMessage(kid:instanceId:machineHash:deviceKey:leaseSignature:)``.
/// The lease alone says nothing about the machine, so without the binding a response could be
/// copied to any number of devices; with it, only the device whose machine hash and device key
/// made the request can import it.
public struct OfflineActivationResponse: Hashable, Sendable {
    public static let label = "KEYLIGHT ACTIVATION"

    public var instanceId: String
    /// nil for a lifetime license.
    public var licenseExpiresAt: Int64?
    public var lease: Lease
    public var config: SignedProductConfig
    public var machineHash: String
    /// Base64 Ed25519 signature by the lease's key over the binding message.
    public var binding: String

    public init(instanceId: String, licenseExpiresAt: Int64?, lease: Lease, config: SignedProductConfig, machineHash: String, binding: String) {
        self.instanceId = instanceId
        self.licenseExpiresAt = licenseExpiresAt
        self.lease = lease
        self.config = config
        self.machineHash = machineHash
        self.binding = binding
    }

    /// `kl-offline-activation|<kid>|<instance_id>|<machine_hash>|<device_key>|<lease signature>`.
    /// Every field but the machine hash is free of `|` (a kid, an id, two base64 strings of
    /// fixed length), so the message reads one way only.
    public static func bindingMessage(kid: String, instanceId: String, machineHash: String, deviceKey: String, leaseSignature: String) -> Data {
        Data("kl-offline-activation|\(kid)|\(instanceId)|\(machineHash)|\(deviceKey)|\(leaseSignature)".utf8)
    }

    /// Whether the binding was signed by the trusted key that signed the lease, for this machine
    /// hash and device key.
    public func isBound(to machineHash: String, deviceKey: Curve25519.Signing.PublicKey, keyset: Keyset) -> Bool {
        guard machineHash == self.machineHash, let key = keyset[lease.kid], let signature = Base64.decode(binding), signature.count == 64 else { return false }
        let message = Self.bindingMessage(
            kid: lease.kid, instanceId: instanceId, machineHash: machineHash,
            deviceKey: Base64.encode(deviceKey.rawRepresentation), leaseSignature: lease.signature
        )
        return key.isValidSignature(signature, for: message)
    }

    private struct Wire: Codable {
        var v: Int
        var instance_id: String
        var license_expires_at: Int64?
        var lease: Lease
        var config: SignedProductConfig
        var machine_hash: String
        var binding: String

        // `license_expires_at` is always written, as `null` for a lifetime license.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(v, forKey: .v)
            try container.encode(instance_id, forKey: .instance_id)
            try container.encode(license_expires_at, forKey: .license_expires_at)
            try container.encode(lease, forKey: .lease)
            try container.encode(config, forKey: .config)
            try container.encode(machine_hash, forKey: .machine_hash)
            try container.encode(binding, forKey: .binding)
        }
    }

    /// The response file's text.
    public var armored: String {
        ArmoredText.encode(OfflineFields.json(Wire(
            v: 1, instance_id: instanceId, license_expires_at: licenseExpiresAt, lease: lease, config: config,
            machine_hash: machineHash, binding: binding
        )), label: Self.label)
    }

    /// Parses a response file. Nothing in it is trusted yet: the importer verifies the lease,
    /// the config and the binding against the keys it pins.
    public init(armored text: some StringProtocol) throws(OfflineFileError) {
        let wire = try OfflineFields.decode(Wire.self, from: try ArmoredText.decode(text, label: Self.label))
        try OfflineFields.version(wire.v)
        instanceId = try OfflineFields.identifier(wire.instance_id, "instance_id")
        licenseExpiresAt = try wire.license_expires_at.map { value throws(OfflineFileError) in try OfflineFields.time(value, "license_expires_at") }
        lease = wire.lease
        guard lease.instanceId == instanceId else { throw .badField("lease.instanceId", "does not match instance_id") }
        config = wire.config
        machineHash = try OfflineFields.text(wire.machine_hash, "machine_hash", max: 128)
        binding = wire.binding
        _ = try OfflineFields.signature(wire.binding, "binding")
    }
}
