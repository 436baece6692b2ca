import Foundation
import KeylightCore

extension LicenseManager {
    /// The devices using this device's license (protocol 6.3), for a "3 of 3 devices in use"
    /// screen. Needs the server; changes no state.
    public func devices() async throws -> Seats {
        try await requireReadableStore()
        // The stored key was checked when it was activated.
        guard let text = stored.licenseKey, let key = try? LicenseKey(text) else { throw KeylightError.notActivated }
        return try await devices(of: key)
    }

    /// The devices using the license `key`: what an app shows when activating it hit the cap
    /// (that error's ``KeylightError/seats`` holds the same list).
    public func devices(key text: String) async throws -> Seats {
        try await devices(of: try typedKey(text))
    }

    private func devices(of key: LicenseKey) async throws -> Seats {
        let exchange = await client.instances(key: key.text)
        record(exchange.verification)
        switch exchange.reply {
        case .success(let body):
            return body.seats(licenseKey: key.text, thisInstance: stored.licenseKey.map(LicenseKey.hash(normalizing:)) == key.keyHash ? stored.instanceId : nil)
        case .rejected(let error), .transient(let error, _):
            throw error
        }
    }

    /// Frees `device`'s slot. For this device it is ``deactivate()`` (the license is forgotten
    /// here); for another, its slot is freed on the server and this device is unchanged, so an
    /// app can free "Studio Mac" and then activate. The customer's key is the proof of ownership.
    public func deactivate(device: Device) async throws {
        try await requireReadableStore()
        if device.isThisDevice || (device.id == stored.instanceId && stored.licenseKey.map(LicenseKey.hash(normalizing:)) == LicenseKey.hash(normalizing: device.licenseKey)) {
            try await deactivate()
            return
        }
        let exchange = await client.deactivate(key: device.licenseKey, instanceId: device.id)
        record(exchange.verification)
        switch exchange.reply {
        case .success:
            return
        case .rejected(let error) where error.code == "INSTANCE_INACTIVE":
            return  // already free
        case .rejected(let error), .transient(let error, _):
            throw error
        }
    }
}
