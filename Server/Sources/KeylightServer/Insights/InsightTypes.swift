/// A device's telemetry on one day, as the flush writes it to `device_days`.
struct DeviceSighting: Hashable, Sendable {
    var tenantId: String
    var productId: String
    var day: Int64
    var telemetry: Telemetry
}

/// How many devices, last seen in a window with these values, of one kind.
struct DeviceCombination: Sendable, Equatable {
    var kind: DeviceKind
    var telemetry: Telemetry
    var devices: Int
}

/// A licensed instance, or a keyless (trial or free-tier) install.
enum DeviceKind: String, Sendable, CaseIterable {
    case licensed, keyless
}

/// The funnel's raw figures for installs first seen in a range of days.
struct FunnelFigures: Sendable, Equatable {
    var keylessInstalls = 0
    var trials = 0
    /// Seconds from first sight to conversion, one per converted install.
    var secondsToConvert: [Int64] = []
    /// Converted at least 30 days before `now`, and of those, still active 30 days on.
    var convertedLongAgo = 0
    var stillActiveAfter30Days = 0
}

/// A license whose devices went quiet.
struct QuietLicense: Sendable, Equatable {
    var licenseId: String
    var maskedKey: String
    var customerEmail: String?
    var devices: Int
    var lastSeenAt: Int64
}
