/// Appends tagged fields.
struct CompactWriter {
    private(set) var bytes: [UInt8]

    init(header: [UInt8] = []) {
        bytes = header
        bytes.reserveCapacity(1_024)
    }

    mutating func string(_ tag: UInt8, _ value: String?) {
        guard let value else { return }
        field(tag, Array(value.utf8))
    }

    mutating func integer(_ tag: UInt8, _ value: Int64?) {
        guard let value else { return }
        field(tag, withUnsafeBytes(of: value.littleEndian, Array.init))
    }

    mutating func flag(_ tag: UInt8, _ value: Bool?) {
        guard let value else { return }
        field(tag, [value ? 1 : 0])
    }

    mutating func strings(_ tag: UInt8, _ values: [String]?) {
        guard let values else { return }
        var list: [UInt8] = []
        for value in values {
            Self.appendLength(value.utf8.count, to: &list)
            list.append(contentsOf: value.utf8)
        }
        field(tag, list)
    }

    mutating func nested(_ tag: UInt8, _ body: (inout CompactWriter) -> Void) {
        var inner = CompactWriter()
        body(&inner)
        field(tag, inner.bytes)
    }

    private mutating func field(_ tag: UInt8, _ payload: [UInt8]) {
        bytes.append(tag)
        Self.appendLength(payload.count, to: &bytes)
        bytes.append(contentsOf: payload)
    }

    private static func appendLength(_ length: Int, to bytes: inout [UInt8]) {
        var rest = UInt64(length)
        while rest >= 0x80 {
            bytes.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }
}
