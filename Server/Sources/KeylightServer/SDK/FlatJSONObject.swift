import Foundation

/// An SDK request body in the shape every client sends: one JSON object whose values are all
/// ASCII strings without escape sequences, or null. Read by hand, because `JSONDecoder` cost a
/// validate about 11 µs of its CPU; anything else (an escape, a byte outside ASCII, a number, a
/// nested value, a repeated key, anything after the object) makes the reader decline, and the body is
/// decoded with `JSONDecoder` as before. So this never answers differently from it, only sooner.
struct FlatJSONObject {
    private var members: [(key: String, value: String?)] = []

    /// nil when `bytes` is not an object of that shape.
    init?(_ bytes: some Collection<UInt8>) {
        let read: [(key: String, value: String?)]? = bytes.withContiguousStorageIfAvailable { Self.members(of: $0) }
            ?? Array(bytes).withUnsafeBufferPointer { Self.members(of: $0) }
        guard let read else { return nil }
        members = read
    }

    /// The member `key`: `.some(nil)` when it is null, nil when absent.
    subscript(key: String) -> String?? {
        for member in members where member.key == key { return .some(member.value) }
        return nil
    }

    private static let maximumMembers = 64

    private static func members(of bytes: UnsafeBufferPointer<UInt8>) -> [(key: String, value: String?)]? {
        var at = 0
        func skipSpace() {
            while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x0A || bytes[at] == 0x0D || bytes[at] == 0x09 { at += 1 }
        }
        func take(_ byte: UInt8) -> Bool {
            guard at < bytes.count, bytes[at] == byte else { return false }
            at += 1
            return true
        }
        /// A string of printable ASCII without escapes.
        func string() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = at
            while at < bytes.count {
                let byte = bytes[at]
                if byte == UInt8(ascii: "\"") {
                    defer { at += 1 }
                    return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { return nil }
                at += 1
            }
            return nil
        }
        func null() -> Bool {
            guard bytes.count - at >= 4, bytes[at] == UInt8(ascii: "n"), bytes[at + 1] == UInt8(ascii: "u"),
                  bytes[at + 2] == UInt8(ascii: "l"), bytes[at + 3] == UInt8(ascii: "l") else { return false }
            at += 4
            return true
        }

        var members: [(key: String, value: String?)] = []
        skipSpace()
        guard take(UInt8(ascii: "{")) else { return nil }
        skipSpace()
        if !take(UInt8(ascii: "}")) {
            while true {
                skipSpace()
                guard let key = string(), members.count < maximumMembers, !members.contains(where: { $0.key == key }) else { return nil }
                skipSpace()
                guard take(UInt8(ascii: ":")) else { return nil }
                skipSpace()
                if let value = string() {
                    members.append((key, value))
                } else if null() {
                    members.append((key, nil))
                } else {
                    return nil
                }
                skipSpace()
                if take(UInt8(ascii: ",")) { continue }
                guard take(UInt8(ascii: "}")) else { return nil }
                break
            }
        }
        skipSpace()
        return at == bytes.count ? members : nil
    }
}

/// A request body that can be read from a ``FlatJSONObject`` exactly as `JSONDecoder` reads it.
protocol FlatJSONDecodable: Decodable {
    init(flat object: FlatJSONObject)
}

extension FlatJSONObject {
    /// An optional `String` field as a synthesised `Decodable` reads it (null and absent are nil).
    func text(_ key: String) -> String? {
        self[key] ?? nil
    }
}

extension ValidateRequest: FlatJSONDecodable {
    init(flat object: FlatJSONObject) {
        self.init(license_key: object.text("license_key"), instance_id: object.text("instance_id"), machine_hash: object.text("machine_hash"))
    }
}

extension ActivateRequest: FlatJSONDecodable {
    init(flat object: FlatJSONObject) {
        self.init(
            license_key: object.text("license_key"), instance_name: object.text("instance_name"), machine_hash: object.text("machine_hash"),
            free_tier_instance_id: object.text("free_tier_instance_id"), instance_id: object.text("instance_id")
        )
    }
}

extension Telemetry {
    /// As ``init(from:)`` reads it: a string as itself, null as nothing.
    init(flat object: FlatJSONObject) {
        self.init(
            appVersion: object.text(CodingKeys.appVersion.rawValue), sdkVersion: object.text(CodingKeys.sdkVersion.rawValue),
            sdk: object.text(CodingKeys.sdk.rawValue), platform: object.text(CodingKeys.platform.rawValue),
            osVersion: object.text(CodingKeys.osVersion.rawValue), arch: object.text(CodingKeys.arch.rawValue),
            cpuCores: object.text(CodingKeys.cpuCores.rawValue), memory: object.text(CodingKeys.memory.rawValue)
        )
    }
}

extension SDKBody: FlatJSONDecodable where Fields: FlatJSONDecodable {
    init(flat object: FlatJSONObject) {
        self.init(fields: Fields(flat: object), telemetry: Telemetry(flat: object))
    }
}

/// ``decodeBody(_:from:)`` for the bodies SDKs send most: read by hand when the body has the
/// common shape (``FlatJSONObject``), else by `JSONDecoder`, with the same result either way.
func decodeBody<T: FlatJSONDecodable>(_ type: T.Type, from bytes: some DataProtocol) throws(APIError) -> T {
    if let object = FlatJSONObject(bytes) { return T(flat: object) }
    return try decodeJSONBody(T.self, from: bytes)
}
