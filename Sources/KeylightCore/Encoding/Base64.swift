import Foundation

/// Base64 helpers shared by every format in Keylight.
///
/// Keylight emits standard, padded base64 and accepts the standard and URL-safe alphabets,
/// padded or not, because clients in other languages emit all four.
public enum Base64 {
    /// Standard alphabet, padded.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
    }

    /// URL-safe alphabet, unpadded (RFC 4648 §5), for values that travel in URLs.
    public static func encodeURLSafe(_ bytes: some Sequence<UInt8>) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// Decodes standard or URL-safe base64, padded or not. Returns nil for anything else,
    /// including white space, characters outside both alphabets and misplaced padding.
    public static func decode(_ text: some StringProtocol) -> Data? {
        var utf8 = Array(text.utf8)
        var padding = 0
        while utf8.last == UInt8(ascii: "=") {
            utf8.removeLast()
            padding += 1
        }
        guard padding <= 2 else { return nil }
        if utf8.isEmpty { return padding == 0 ? Data() : nil }
        for index in utf8.indices {
            switch utf8[index] {
            case UInt8(ascii: "-"): utf8[index] = UInt8(ascii: "+")
            case UInt8(ascii: "_"): utf8[index] = UInt8(ascii: "/")
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                break
            default:
                return nil
            }
        }
        let remainder = utf8.count % 4
        // Padding, when present, must be exactly what completes the last quantum.
        guard remainder != 1, padding == 0 || padding == (4 - remainder) % 4 else { return nil }
        if remainder > 0 { utf8.append(contentsOf: repeatElement(UInt8(ascii: "="), count: 4 - remainder)) }
        return Data(base64Encoded: Data(utf8))
    }
}
