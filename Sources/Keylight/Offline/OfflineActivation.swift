import Foundation
import KeylightCore

/// Activation of a device that cannot reach the server (protocol 6.4):
///
/// 1. the device makes a request file (``request(configuration:)`` or
///    ``LicenseManager/offlineActivationRequest()``) — it holds no license key;
/// 2. on any machine online, the customer turns it into a response file with the key: the
///    customer portal, ``LicenseManager/offlineActivationResponse(forRequest:key:)``, or
///    `keylight client offline-activate`;
/// 3. the device imports it with ``LicenseManager/activate(offlineResponse:key:)``.
///
/// To give the seat back, the device makes a proof (``LicenseManager/offlineDeactivationProof()``)
/// that the customer submits the same way.
public enum OfflineActivation {
    /// The request file for this device and product. The first call makes the device key and
    /// keeps it in the configuration's secure store; later requests reuse it.
    public static func request(configuration: Configuration) throws -> String {
        let store = configuration.store
        let machineHash = try MachineIdentity.hash(productKey: "\(configuration.tenantId)/\(configuration.productId)", store: store)
        let deviceKey = try DeviceKey.load(from: store)
        return OfflineActivationRequest(
            tenantId: configuration.tenantId, productId: configuration.productId, machineHash: machineHash,
            instanceName: instanceName(configuration.instanceName), deviceKey: deviceKey.publicKey,
            createdAt: max(0, configuration.clock.unixSeconds)
        ).armored
    }

    /// The instance name as a request may carry it: control characters dropped, at most 256 UTF-8
    /// bytes, never empty.
    static func instanceName(_ name: String) -> String {
        var out = ""
        for character in name where !character.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            guard out.utf8.count + character.utf8.count <= 256 else { break }
            out.append(character)
        }
        return out.isEmpty ? "offline device" : out
    }
}
