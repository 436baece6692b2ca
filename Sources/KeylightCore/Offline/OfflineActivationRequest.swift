import Crypto
import Foundation

/// The file an offline device makes to ask for activation (protocol 6.4). It carries no license
/// key: the customer types the key where the file is turned into a response (the portal, the
/// dashboard, `keylight client offline-activate`), so the file itself is not worth stealing.
public struct OfflineActivationRequest: Hashable, Sendable {
    public static let label = "KEYLIGHT ACTIVATION REQUEST"

    public var tenantId: String
    public var productId: String
    /// The device's per-product hash (the same one online activation sends).
    public var machineHash: String
    public var instanceName: String
    /// The device's own Ed25519 key; only its holder can sign the deactivation proof later.
    public var deviceKey: Curve25519.Signing.PublicKey
    /// When the device made the request, by its own clock (informational: offline clocks drift).
    public var createdAt: Int64

    public init(tenantId: String, productId: String, machineHash: String, instanceName: String, deviceKey: Curve25519.Signing.PublicKey, createdAt: Int64) {
        self.tenantId = tenantId
        self.productId = productId
        self.machineHash = machineHash
        self.instanceName = instanceName
        self.deviceKey = deviceKey
        self.createdAt = createdAt
    }

    /// The device key as the file carries it (base64 of the 32 raw bytes).
    public var deviceKeyBase64: String { Base64.encode(deviceKey.rawRepresentation) }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.tenantId == rhs.tenantId && lhs.productId == rhs.productId && lhs.machineHash == rhs.machineHash
            && lhs.instanceName == rhs.instanceName && lhs.deviceKey.rawRepresentation == rhs.deviceKey.rawRepresentation && lhs.createdAt == rhs.createdAt
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(machineHash)
        hasher.combine(deviceKey.rawRepresentation)
    }

    private struct Wire: Codable {
        var v: Int
        var tenant_id: String
        var product_id: String
        var machine_hash: String
        var instance_name: String
        var device_key: String
        var created_at: Int64
    }

    /// The request file's text.
    public var armored: String {
        ArmoredText.encode(OfflineFields.json(Wire(
            v: 1, tenant_id: tenantId, product_id: productId, machine_hash: machineHash,
            instance_name: instanceName, device_key: deviceKeyBase64, created_at: createdAt
        )), label: Self.label)
    }

    /// Parses a request file, checking every field's type, length and form.
    public init(armored text: some StringProtocol) throws(OfflineFileError) {
        let wire = try OfflineFields.decode(Wire.self, from: try ArmoredText.decode(text, label: Self.label))
        try OfflineFields.version(wire.v)
        tenantId = try OfflineFields.identifier(wire.tenant_id, "tenant_id")
        productId = try OfflineFields.identifier(wire.product_id, "product_id")
        machineHash = try OfflineFields.text(wire.machine_hash, "machine_hash", max: 128)
        instanceName = try OfflineFields.text(wire.instance_name, "instance_name", max: 256)
        deviceKey = try OfflineFields.publicKey(wire.device_key, "device_key")
        createdAt = try OfflineFields.time(wire.created_at, "created_at")
    }
}
