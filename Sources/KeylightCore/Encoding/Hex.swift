import Crypto

/// Lower-case hexadecimal, the form of every hash Keylight shows or stores.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Lower-case hex of `bytes`.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        if let text = bytes.withContiguousStorageIfAvailable({ encode(buffer: UnsafeRawBufferPointer($0)) }) {
            return text
        }
        return Array(bytes).withUnsafeBytes { encode(buffer: $0) }
    }

    /// Lower-case hex of a digest. A digest iterated as a sequence copies itself per byte; this
    /// reads its bytes in place (a license key's hash is taken on every validate).
    public static func encode(_ digest: some Digest) -> String {
        digest.withUnsafeBytes { encode(buffer: $0) }
    }

    private static func encode(buffer: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: buffer.count * 2) { out in
            var index = 0
            for byte in buffer {
                out[index] = digits[Int(byte >> 4)]
                out[index + 1] = digits[Int(byte & 0x0F)]
                index += 2
            }
            return index
        }
    }

    /// Bytes of a hex string (either case); nil when the text is not hex of whole bytes.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count.isMultiple(of: 2) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    /// True when `text` is exactly `count` lower-case hex characters.
    public static func isLowerHex(_ text: some StringProtocol, count: Int) -> Bool {
        var seen = 0
        for byte in text.utf8 {
            guard (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f")) else { return false }
            seen += 1
        }
        return seen == count
    }

    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
