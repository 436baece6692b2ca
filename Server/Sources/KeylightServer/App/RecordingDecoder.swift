import Foundation

/// Any key, to list the keys an object holds (a type's own `CodingKeys` list only those it knows).
struct AnyCodingKey: CodingKey {
    let stringValue: String
    let intValue: Int?
    init(stringValue: String) { (self.stringValue, self.intValue) = (stringValue, nil) }
    init(intValue: Int) { (self.stringValue, self.intValue) = (String(intValue), intValue) }
}

/// A `Decoder` that hands everything to `base` and tells `recorder` what was asked.
struct RecordingDecoder: Decoder {
    let base: any Decoder
    let recorder: KeyRecorder

    var codingPath: [any CodingKey] { base.codingPath }
    var userInfo: [CodingUserInfoKey: Any] { base.userInfo }

    static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let container = try base.container(keyedBy: type)
        if let all = try? base.container(keyedBy: AnyCodingKey.self) {
            recorder.holds(all.allKeys.map(\.stringValue), at: Self.path(codingPath))
        }
        return KeyedDecodingContainer(RecordingKeyedContainer(base: container, recorder: recorder))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        RecordingUnkeyedContainer(base: try base.unkeyedContainer(), recorder: recorder)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        RecordingSingleValueContainer(base: try base.singleValueContainer(), decoder: self)
    }
}

/// Types with no keys of their own, or that the real decoder reads its own way (JSONDecoder
/// reads a URL, Date, Data or Decimal by its strategies, not by the type's `init(from:)`).
func isLeaf(_ type: Any.Type) -> Bool {
    switch type {
    case is String.Type, is Bool.Type, is Int.Type, is Int64.Type, is Int32.Type, is Int16.Type, is Int8.Type,
         is UInt.Type, is UInt64.Type, is UInt32.Type, is UInt16.Type, is UInt8.Type, is Double.Type, is Float.Type,
         is URL.Type, is Date.Type, is Data.Type, is Decimal.Type:
        true
    default:
        false
    }
}

/// A nested value, decoded by the real decoder (so it keeps its own rules and coding path) and
/// handed on to `Value` through a recording decoder. `superDecoder(forKey:)` would be simpler, but
/// not every decoder has one (Hummingbird's form decoder traps).
struct Nested<Value: Decodable>: Decodable {
    let value: Value
    init(from decoder: any Decoder) throws {
        guard let recorder = KeyRecorder.current else { value = try Value(from: decoder); return }
        value = try Value(from: RecordingDecoder(base: decoder, recorder: recorder))
    }
}

struct RecordingKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    var base: KeyedDecodingContainer<Key>
    let recorder: KeyRecorder

    var codingPath: [any CodingKey] { base.codingPath }
    var allKeys: [Key] {
        // A type that walks every key (a dictionary) reads them all.
        let keys = base.allKeys
        for key in keys { note(key) }
        return keys
    }

    private func note(_ key: Key) {
        recorder.reads(key.stringValue, at: RecordingDecoder.path(codingPath))
    }

    func contains(_ key: Key) -> Bool { note(key); return base.contains(key) }
    func decodeNil(forKey key: Key) throws -> Bool { note(key); return try base.decodeNil(forKey: key) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { note(key); return try base.decode(type, forKey: key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { note(key); return try base.decode(type, forKey: key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { note(key); return try base.decode(type, forKey: key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { note(key); return try base.decode(type, forKey: key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { note(key); return try base.decode(type, forKey: key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { note(key); return try base.decode(type, forKey: key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { note(key); return try base.decode(type, forKey: key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { note(key); return try base.decode(type, forKey: key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { note(key); return try base.decode(type, forKey: key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { note(key); return try base.decode(type, forKey: key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { note(key); return try base.decode(type, forKey: key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { note(key); return try base.decode(type, forKey: key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { note(key); return try base.decode(type, forKey: key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { note(key); return try base.decode(type, forKey: key) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        note(key)
        if isLeaf(type) { return try base.decode(type, forKey: key) }
        return try base.decode(Nested<T>.self, forKey: key).value
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        note(key)
        guard base.contains(key), try !base.decodeNil(forKey: key) else { return nil }
        return try decode(type, forKey: key)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        note(key)
        let nested = try base.nestedContainer(keyedBy: type, forKey: key)
        if let all = try? base.nestedContainer(keyedBy: AnyCodingKey.self, forKey: key) {
            recorder.holds(all.allKeys.map(\.stringValue), at: RecordingDecoder.path(nested.codingPath))
        }
        return KeyedDecodingContainer(RecordingKeyedContainer<NestedKey>(base: nested, recorder: recorder))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        note(key)
        return RecordingUnkeyedContainer(base: try base.nestedUnkeyedContainer(forKey: key), recorder: recorder)
    }

    func superDecoder() throws -> any Decoder { RecordingDecoder(base: try base.superDecoder(), recorder: recorder) }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        note(key)
        return RecordingDecoder(base: try base.superDecoder(forKey: key), recorder: recorder)
    }
}
