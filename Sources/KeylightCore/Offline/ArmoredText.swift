import Foundation

/// The envelope every offline file shares: base64 of a JSON object between
/// `-----BEGIN <label>-----` and `-----END <label>-----` lines (protocol 6.4), so the file
/// survives email, chat and being typed into a form.
public enum ArmoredText {
    /// Larger than any real file by far (a response with a dozen entitlements is under 2 KiB);
    /// checked before anything else is done with the text.
    public static let maxBytes = 16 * 1024
    /// Base64 lines are wrapped at this width, as PEM does.
    static let lineWidth = 64

    /// The file for `payload` under `label`.
    public static func encode(_ payload: Data, label: String) -> String {
        let body = Base64.encode(payload)
        var lines = ["-----BEGIN \(label)-----"]
        var start = body.startIndex
        while start < body.endIndex {
            let end = body.index(start, offsetBy: lineWidth, limitedBy: body.endIndex) ?? body.endIndex
            lines.append(String(body[start..<end]))
            start = end
        }
        lines.append("-----END \(label)-----")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The payload of the first armored block labelled `label` in `text`. Text around the block
    /// (an email's greeting, a chat client's quoting) is ignored; white space inside it too.
    /// Another Keylight label is named in the error, so a customer who pasted the wrong file
    /// learns which one it was.
    public static func decode(_ text: some StringProtocol, label: String) throws(OfflineFileError) -> Data {
        guard text.utf8.count <= maxBytes else { throw .tooLarge(maxBytes) }
        let bytes = Array(text.utf8)
        let beginMarker = Array("-----BEGIN ".utf8)
        let dashes = Array("-----".utf8)
        // The first block with this label; another Keylight label seen first is remembered, to name it.
        var searchFrom = 0
        var otherKind: String?
        var found: Range<Int>?
        while let begin = bytes[searchFrom...].firstRange(of: beginMarker),
              let labelEnd = bytes[begin.upperBound...].firstRange(of: dashes) {
            let seen = String(decoding: bytes[begin.upperBound..<labelEnd.lowerBound], as: UTF8.self)
            if seen == label {
                found = labelEnd
                break
            }
            if otherKind == nil, seen.hasPrefix("KEYLIGHT "), seen.utf8.count <= 40 { otherKind = String(seen.dropFirst(9)) }
            searchFrom = labelEnd.upperBound
        }
        guard let labelEnd = found else {
            throw otherKind.map { .wrongKind(found: $0, expected: String(label.dropFirst(9))) } ?? .missingBegin(label)
        }
        let endMarker = Array("-----END \(label)-----".utf8)
        guard let end = bytes[labelEnd.upperBound...].firstRange(of: endMarker) else { throw .missingEnd(label) }
        let body = bytes[labelEnd.upperBound..<end.lowerBound].filter { !isWhiteSpace($0) }
        guard !body.isEmpty, let payload = Base64.decode(String(decoding: body, as: UTF8.self)) else { throw .notBase64 }
        return payload
    }

    private static func isWhiteSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: ">")
    }
}
