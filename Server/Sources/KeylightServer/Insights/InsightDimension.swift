/// What the insights can group devices by: a telemetry field, named as the SDK sends it (and as
/// `?by=` takes it). The name is also the column of `instances`, `keyless_installs` and
/// `device_days` that holds it, so SQL names a column only from this closed list.
enum InsightDimension: String, CaseIterable, Sendable {
    case appVersion = "app_version"
    case osVersion = "os_version"
    case platform
    case arch
    case sdk
    case sdkVersion = "sdk_version"
    case cpuCores = "cpu_cores"
    case memory

    var column: String { rawValue }

    /// How the dashboard names it.
    var title: String {
        switch self {
        case .appVersion: "App version"
        case .osVersion: "OS version"
        case .platform: "Platform"
        case .arch: "Architecture"
        case .sdk: "SDK"
        case .sdkVersion: "SDK version"
        case .cpuCores: "CPU cores"
        case .memory: "Memory"
        }
    }

    /// The stored value for a device that did not send the field (a primary-key column cannot be NULL).
    static let notSent = ""

    /// `?by=` as the API documents it; a bad value is a 400 naming the choices.
    init(query: String) throws(APIError) {
        guard let dimension = InsightDimension(rawValue: query) else {
            throw .invalidRequest("by must be one of \(Self.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        self = dimension
    }
}
