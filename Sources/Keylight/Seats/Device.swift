import Foundation

/// A device holding one of a license's activation slots (protocol 6.3). Its descriptions and
/// mirror leave out the license key it carries (apps log what they print).
public struct Device: Hashable, Sendable, Identifiable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The server's instance id.
    public let id: String
    /// The name the device registered under (`Configuration.instanceName`).
    public let name: String
    public let activatedAt: Date
    /// The last validation the server has recorded, else the activation.
    public let lastSeenAt: Date
    /// Activated from an offline request file.
    public let isOffline: Bool
    /// This device (its instance is the one the manager holds).
    public let isThisDevice: Bool
    /// The key that owns the slot: freeing it needs the key, and the device list is only ever
    /// obtained with it. Kept out of descriptions.
    let licenseKey: String

    public var description: String { "Device(id: \(id), name: \(name)\(isThisDevice ? ", this device" : ""))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["id": id, "name": name, "activatedAt": activatedAt, "lastSeenAt": lastSeenAt, "isOffline": isOffline, "isThisDevice": isThisDevice])
    }

    public init(id: String, name: String, activatedAt: Date, lastSeenAt: Date, isOffline: Bool, isThisDevice: Bool, licenseKey: String) {
        self.id = id
        self.name = name
        self.activatedAt = activatedAt
        self.lastSeenAt = lastSeenAt
        self.isOffline = isOffline
        self.isThisDevice = isThisDevice
        self.licenseKey = licenseKey
    }
}

/// A license's slots and the devices in them: what an app shows as "3 of 3 devices in use".
public struct Seats: Hashable, Sendable {
    public let activationLimit: Int
    /// Active devices, oldest activation first.
    public let devices: [Device]

    public init(activationLimit: Int, devices: [Device]) {
        self.activationLimit = activationLimit
        self.devices = devices
    }

    /// Every slot is taken: activating another device needs one freed first.
    public var isFull: Bool { devices.count >= activationLimit }
}

/// The server's `{"activation_limit","instances":[…]}`, in the `instances` answer and in the
/// 409 of a full license.
struct SeatsBody: Decodable, Sendable, Hashable {
    var activation_limit: Int
    var instances: [Entry]

    struct Entry: Decodable, Sendable, Hashable {
        var instance_id: String
        var instance_name: String
        var activated_at: Int64
        var last_seen_at: Int64?
        var offline: Bool?
    }

    /// The seats as the app sees them; at most 1,000 entries are read (the server caps licenses
    /// far below that), and an implausible limit reads as none.
    func seats(licenseKey: String, thisInstance: String?) -> Seats {
        Seats(
            activationLimit: max(0, min(activation_limit, 1_000_000)),
            devices: instances.prefix(1_000).map { entry in
                Device(
                    id: entry.instance_id, name: entry.instance_name,
                    activatedAt: Date(timeIntervalSince1970: TimeInterval(entry.activated_at)),
                    lastSeenAt: Date(timeIntervalSince1970: TimeInterval(entry.last_seen_at ?? entry.activated_at)),
                    isOffline: entry.offline ?? false, isThisDevice: entry.instance_id == thisInstance, licenseKey: licenseKey
                )
            }
        )
    }
}

extension Seats {
    /// The same seats with the owning key (and this device) filled in.
    func owned(by licenseKey: String, thisInstance: String?) -> Seats {
        Seats(activationLimit: activationLimit, devices: devices.map {
            Device(id: $0.id, name: $0.name, activatedAt: $0.activatedAt, lastSeenAt: $0.lastSeenAt, isOffline: $0.isOffline,
                   isThisDevice: $0.id == thisInstance, licenseKey: licenseKey)
        })
    }
}
