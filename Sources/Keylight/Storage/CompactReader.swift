import Foundation

/// A stored state in the compact layout that cannot be read.
struct CompactStateError: Error, Hashable, Sendable {
    let description: String

    /// Not this layout's header, or a version this SDK does not know (a later one's).
    static let unknownVersion = Self(description: "stored state: unknown layout version")
    /// A field runs past the end, has the wrong size for its kind, or a required one is missing.
    static let malformed = Self(description: "stored state: malformed")
}

/// Reads tagged fields from a range of bytes, never past its end.
struct CompactReader {
    private let bytes: [UInt8]
    private let range: Range<Int>
    /// Lengths beyond this are refused before anything is read (a state is a few kilobytes).
    static let lengthLimit = 1 << 20

    init(_ bytes: [UInt8], from start: Int) {
        self.init(bytes, range: start..<bytes.count)
    }

    private init(_ bytes: [UInt8], range: Range<Int>) {
        self.bytes = bytes
        self.range = range
    }

    /// Calls `body` with each field's tag and a reader over its payload.
    func fields(_ body: (UInt8, CompactReader) throws -> Void) throws {
        var position = range.lowerBound
        while position < range.upperBound {
            let tag = bytes[position]
            position += 1
            let length = try Self.length(bytes, at: &position, end: range.upperBound)
            guard length <= range.upperBound - position else { throw CompactStateError.malformed }
            try body(tag, CompactReader(bytes, range: position..<(position + length)))
            position += length
        }
    }

    func string() throws -> String {
        guard let value = String(bytes: bytes[range], encoding: .utf8) else { throw CompactStateError.malformed }
        return value
    }

    func integer() throws -> Int64 {
        guard range.count == 8 else { throw CompactStateError.malformed }
        var value: UInt64 = 0
        for (shift, byte) in bytes[range].enumerated() { value |= UInt64(byte) << (8 * UInt64(shift)) }
        return Int64(bitPattern: value)
    }

    func flag() throws -> Bool {
        guard range.count == 1, bytes[range.lowerBound] <= 1 else { throw CompactStateError.malformed }
        return bytes[range.lowerBound] == 1
    }

    func strings() throws -> [String] {
        var values: [String] = []
        var position = range.lowerBound
        while position < range.upperBound {
            let length = try Self.length(bytes, at: &position, end: range.upperBound)
            guard length <= range.upperBound - position else { throw CompactStateError.malformed }
            values.append(try CompactReader(bytes, range: position..<(position + length)).string())
            position += length
        }
        return values
    }

    private static func length(_ bytes: [UInt8], at position: inout Int, end: Int) throws -> Int {
        var value = 0
        var shift = 0
        while true {
            guard position < end, shift <= 21 else { throw CompactStateError.malformed }
            let byte = bytes[position]
            position += 1
            value |= Int(byte & 0x7F) << shift
            if byte < 0x80 { break }
            shift += 7
        }
        guard value <= lengthLimit else { throw CompactStateError.malformed }
        return value
    }
}
