/// A minimal JSON writer for the SDK's hot responses, which Foundation's reflective
/// `JSONEncoder` made a tenth of a validate's cost. Fields come out in the order written.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    private var needsComma = [false]

    init(capacity: Int = 512) {
        bytes.reserveCapacity(capacity)
    }

    mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma.append(false)
    }

    mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma.removeLast()
        needsComma[needsComma.count - 1] = true
    }

    mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        // The value follows the colon directly.
        needsComma[needsComma.count - 1] = false
    }

    mutating func string(_ value: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        // Nearly every value (base64, ids, hex, dates) needs no escape: one scan and one copy,
        // where appending byte by byte was a quarter of a validate's glue (callgrind).
        var value = value
        let copied = value.withUTF8 { utf8 -> Bool in
            guard !utf8.contains(where: Self.needsEscape) else { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if !copied { appendEscaped(value) }
        bytes.append(UInt8(ascii: "\""))
        needsComma[needsComma.count - 1] = true
    }

    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    private mutating func appendEscaped(_ value: String) {
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case ..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
    }

    mutating func integer(_ value: Int64) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
        needsComma[needsComma.count - 1] = true
    }

    mutating func integer(_ value: Int64?) {
        if let value { integer(value) } else { null() }
    }

    mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
        needsComma[needsComma.count - 1] = true
    }

    mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
        needsComma[needsComma.count - 1] = true
    }

    mutating func strings(_ values: [String]) {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma.append(false)
        for value in values { string(value) }
        needsComma.removeLast()
        bytes.append(UInt8(ascii: "]"))
        needsComma[needsComma.count - 1] = true
    }

    private mutating func separate() {
        if needsComma[needsComma.count - 1] { bytes.append(UInt8(ascii: ",")) }
    }
}
