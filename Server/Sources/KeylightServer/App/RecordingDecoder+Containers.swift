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
