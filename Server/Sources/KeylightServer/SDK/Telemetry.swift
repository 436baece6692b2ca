/// What an app says about itself in an SDK request body (protocol 6.8): versions, platform and
/// coarse device buckets. Declared once for every SDK request. Never a reason to refuse a request:
/// a value of the wrong JSON type is read as text or dropped, and an over-long one is cut at its
/// cap (at a whole UTF-8 character), with control characters removed, so no validate of a paying
/// user fails on a label.
struct Telemetry: Decodable, Sendable, Hashable {
    var appVersion: String?
    var sdkVersion: String?
    var sdk: String?
    var platform: String?
    var osVersion: String?
    var arch: String?
    var cpuCores: String?
    var memory: String?

    /// Each field's JSON name and cap in bytes (protocol 6.8).
    enum CodingKeys: String, CodingKey, CaseIterable {
        case appVersion = "app_version", sdkVersion = "sdk_version", sdk, platform, osVersion = "os_version", arch
        case cpuCores = "cpu_cores", memory

        var cap: Int {
            switch self {
            case .appVersion, .sdkVersion, .osVersion: 64
            case .sdk, .platform: 32
            case .arch, .cpuCores, .memory: 16
            }
        }
    }

    init(
        appVersion: String? = nil, sdkVersion: String? = nil, sdk: String? = nil, platform: String? = nil,
        osVersion: String? = nil, arch: String? = nil, cpuCores: String? = nil, memory: String? = nil
    ) {
        self.appVersion = appVersion.flatMap { Self.clean($0, cap: CodingKeys.appVersion.cap) }
        self.sdkVersion = sdkVersion.flatMap { Self.clean($0, cap: CodingKeys.sdkVersion.cap) }
        self.sdk = sdk.flatMap { Self.clean($0, cap: CodingKeys.sdk.cap) }
        self.platform = platform.flatMap { Self.clean($0, cap: CodingKeys.platform.cap) }
        self.osVersion = osVersion.flatMap { Self.clean($0, cap: CodingKeys.osVersion.cap) }
        self.arch = arch.flatMap { Self.clean($0, cap: CodingKeys.arch.cap) }
        self.cpuCores = cpuCores.flatMap { Self.clean($0, cap: CodingKeys.cpuCores.cap) }
        self.memory = memory.flatMap { Self.clean($0, cap: CodingKeys.memory.cap) }
    }

    init(from decoder: any Decoder) throws {
        // Only the body's shape can fail here (not an object), and the request's own fields
        // already refuse that: a telemetry value never does. Values are cleaned once, by the
        // memberwise initialiser.
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func text(_ key: CodingKeys) -> String? {
            guard container.contains(key) else { return nil }
            if let value = try? container.decode(String.self, forKey: key) { return value }
            if let value = try? container.decode(Int64.self, forKey: key) { return String(value) }
            if let value = try? container.decode(Double.self, forKey: key) { return String(value) }
            if let value = try? container.decode(Bool.self, forKey: key) { return String(value) }
            return nil
        }
        self.init(
            appVersion: text(.appVersion), sdkVersion: text(.sdkVersion), sdk: text(.sdk), platform: text(.platform),
            osVersion: text(.osVersion), arch: text(.arch), cpuCores: text(.cpuCores), memory: text(.memory)
        )
    }

    /// The value as stored: control characters (C0, DEL, C1) removed, surrounding spaces trimmed,
    /// cut at `cap` bytes; nil when nothing is left.
    static func clean(_ value: String, cap: Int) -> String? {
        // What the clients send: short printable ASCII, kept as it is without a copy.
        let bytes = value.utf8
        if let first = bytes.first, let last = bytes.last, bytes.count <= cap, first != 0x20, last != 0x20,
           bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            return value
        }
        var scalars = String.UnicodeScalarView()
        for scalar in value.unicodeScalars where !(scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)) {
            scalars.append(scalar)
        }
        let trimmed = String(scalars).trimmingSpaces
        guard !trimmed.isEmpty else { return nil }
        return Field.cut(trimmed, maxBytes: cap)
    }

    /// The value of one dimension the insights group by.
    subscript(dimension: InsightDimension) -> String? {
        switch dimension {
        case .appVersion: appVersion
        case .sdkVersion: sdkVersion
        case .sdk: sdk
        case .platform: platform
        case .osVersion: osVersion
        case .arch: arch
        case .cpuCores: cpuCores
        case .memory: memory
        }
    }
}

/// An SDK request body: the action's own fields, and the telemetry every action may carry,
/// read from the same JSON object.
struct SDKBody<Fields: Decodable>: Decodable {
    var fields: Fields
    var telemetry: Telemetry

    init(fields: Fields, telemetry: Telemetry) {
        self.fields = fields
        self.telemetry = telemetry
    }

    init(from decoder: any Decoder) throws {
        fields = try Fields(from: decoder)
        telemetry = (try? Telemetry(from: decoder)) ?? Telemetry()
    }
}

extension String {
    /// Without leading and trailing spaces (U+0020) and tabs.
    var trimmingSpaces: String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}
