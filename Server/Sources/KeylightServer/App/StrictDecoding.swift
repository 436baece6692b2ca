import Foundation
import NIOConcurrencyHelpers

/// Decoding that refuses what a type does not read. A misspelled field (`customer_emial`) in an
/// admin body or a dashboard form is a client's mistake that would otherwise vanish in silence.
///
/// One mechanism for every body type, and no list of fields to keep in step: the value is
/// decoded through ``RecordingDecoder``, which hands every request on to the real decoder
/// (JSONDecoder, URLEncodedFormDecoder) and notes, for each object, the keys it holds and the
/// keys the type asked about (`decode`, `decodeIfPresent`, `contains`, or `allKeys` for a
/// dictionary). A key held but never asked about is unknown.
enum StrictDecoding {
    /// The first unknown field of a decoded value, as a dotted path (`webhook.urll`).
    struct UnknownField: Error, Equatable {
        let path: String
    }

    /// JSON, strictly: what `decodeBody` answers for malformed JSON, plus 400 `UNKNOWN_FIELD`.
    static func json<T: Decodable>(_ type: T.Type, from bytes: some DataProtocol) throws(APIError) -> T {
        do {
            return try JSONDecoder().decode(Strict<T>.self, from: Data(bytes)).value
        } catch let error as UnknownField {
            throw .unknownField(error.path)
        } catch {
            throw APIError.decoding(error)
        }
    }

    /// Lets JSONDecoder hand over its `Decoder`, which it does not expose otherwise.
    private struct Strict<Value: Decodable>: Decodable {
        let value: Value
        init(from decoder: any Decoder) throws {
            value = try StrictDecoding.decode(Value.self, from: decoder)
        }
    }

    /// The top-level fields `T` reads, found by decoding an empty object through the recorder (a
    /// type reads each optional field's key even when it is absent); nil if `{}` is not a `T`.
    static func fieldNames<T: Decodable>(of type: T.Type) -> [String]? {
        try? JSONDecoder().decode(FieldProbe<T>.self, from: Data("{}".utf8)).fields
    }

    private struct FieldProbe<Value: Decodable>: Decodable {
        let fields: [String]
        init(from decoder: any Decoder) throws {
            let recorder = KeyRecorder()
            _ = try KeyRecorder.$current.withValue(recorder) { try Value(from: RecordingDecoder(base: decoder, recorder: recorder)) }
            fields = recorder.readKeys(at: "").sorted()
        }
    }

    /// Decodes `T` from `decoder` and checks that every field was read; `allowed` names top-level
    /// fields read elsewhere (a form's `_csrf`).
    static func decode<T: Decodable>(_ type: T.Type, from decoder: any Decoder, allowed: Set<String> = []) throws -> T {
        let recorder = KeyRecorder()
        let value = try KeyRecorder.$current.withValue(recorder) { try T(from: RecordingDecoder(base: decoder, recorder: recorder)) }
        if let unknown = recorder.firstUnknown(allowed: allowed) { throw UnknownField(path: unknown) }
        return value
    }
}

/// What ``RecordingDecoder`` noted, per object path: the keys held and the keys asked about.
/// (Locked, so it can be a task-local; one decode runs on one task.)
final class KeyRecorder: Sendable {
    /// The recorder of the decode running on this task: a nested value is decoded by the real
    /// decoder's own machinery (``Nested``), which cannot be handed the recorder otherwise.
    @TaskLocal static var current: KeyRecorder?

    private struct State {
        var present: [String: Set<String>] = [:]
        var read: [String: Set<String>] = [:]
    }
    private let state = NIOLockedValueBox(State())

    func holds(_ keys: [String], at path: String) {
        state.withLockedValue { $0.present[path, default: []].formUnion(keys) }
    }

    func reads(_ key: String, at path: String) {
        state.withLockedValue { _ = $0.read[path, default: []].insert(key) }
    }

    func readKeys(at path: String) -> Set<String> {
        state.withLockedValue { $0.read[path, default: []] }
    }

    /// The unknown field that sorts first (so the answer is the same every time).
    func firstUnknown(allowed: Set<String>) -> String? {
        state.withLockedValue { state in
            var unknown: [String] = []
            for (path, keys) in state.present {
                let known = state.read[path, default: []].union(path.isEmpty ? allowed : [])
                for key in keys.subtracting(known) { unknown.append(path.isEmpty ? key : path + "." + key) }
            }
            return unknown.min()
        }
    }
}

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
private func isLeaf(_ type: Any.Type) -> Bool {
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
private struct Nested<Value: Decodable>: Decodable {
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

struct RecordingUnkeyedContainer: UnkeyedDecodingContainer {
    var base: any UnkeyedDecodingContainer
    let recorder: KeyRecorder

    var codingPath: [any CodingKey] { base.codingPath }
    var count: Int? { base.count }
    var isAtEnd: Bool { base.isAtEnd }
    var currentIndex: Int { base.currentIndex }

    mutating func decodeNil() throws -> Bool { try base.decodeNil() }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try base.decode(type) }
    mutating func decode(_ type: String.Type) throws -> String { try base.decode(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try base.decode(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try base.decode(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try base.decode(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try base.decode(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try base.decode(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try base.decode(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try base.decode(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try base.decode(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try base.decode(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try base.decode(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try base.decode(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try base.decode(type) }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if isLeaf(type) { return try base.decode(type) }
        return try base.decode(Nested<T>.self).value
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        // The element is read once, by a decoder that records what it holds.
        try base.decode(NestedKeyed<NestedKey>.self).container
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        RecordingUnkeyedContainer(base: try base.nestedUnkeyedContainer(), recorder: recorder)
    }

    mutating func superDecoder() throws -> any Decoder { RecordingDecoder(base: try base.superDecoder(), recorder: recorder) }
}

struct RecordingSingleValueContainer: SingleValueDecodingContainer {
    let base: any SingleValueDecodingContainer
    let decoder: RecordingDecoder

    var codingPath: [any CodingKey] { base.codingPath }
    func decodeNil() -> Bool { base.decodeNil() }
    func decode(_ type: Bool.Type) throws -> Bool { try base.decode(type) }
    func decode(_ type: String.Type) throws -> String { try base.decode(type) }
    func decode(_ type: Double.Type) throws -> Double { try base.decode(type) }
    func decode(_ type: Float.Type) throws -> Float { try base.decode(type) }
    func decode(_ type: Int.Type) throws -> Int { try base.decode(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try base.decode(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try base.decode(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try base.decode(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try base.decode(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try base.decode(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try base.decode(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try base.decode(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try base.decode(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try base.decode(type) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if isLeaf(type) { return try base.decode(type) }
        // A wrapper decoding its value in place (a property wrapper, `String??`): same decoder, same path.
        return try T(from: decoder)
    }
}

/// An element's keyed container, opened through the recorder (an unkeyed container can be read
/// only once per element).
private struct NestedKeyed<Key: CodingKey>: Decodable {
    let container: KeyedDecodingContainer<Key>
    init(from decoder: any Decoder) throws {
        guard let recorder = KeyRecorder.current else { container = try decoder.container(keyedBy: Key.self); return }
        container = try RecordingDecoder(base: decoder, recorder: recorder).container(keyedBy: Key.self)
    }
}
