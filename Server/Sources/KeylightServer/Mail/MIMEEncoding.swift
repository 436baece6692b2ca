import Foundation

/// The encodings a mail needs: RFC 2047 encoded words for non-ASCII header text, quoted strings
/// for ASCII display names, and base64 bodies in 76-character lines.
enum MIMEEncoding {
    /// A display name: as it is when it is plain ASCII words, quoted when it has specials, or
    /// as encoded words when it is not ASCII.
    static func phrase(_ text: String) -> String {
        if text.unicodeScalars.allSatisfy({ $0.isASCII }) {
            let atext = text.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || ("0"..."9").contains($0) || " !#$%&'*+-/=?^_`{|}~".unicodeScalars.contains($0) }
            if atext { return text }
            return "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        return encodedWords(text)
    }

    /// Header text (a subject): as it is when ASCII, else RFC 2047 `=?UTF-8?B?…?=` words of at
    /// most 75 characters each, split between whole characters, folded onto continuation lines.
    static func unstructured(_ text: String) -> String {
        let clean = String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.map(Character.init))
        if clean.unicodeScalars.allSatisfy({ $0.isASCII }) && clean.utf8.count <= 900 { return clean }
        return encodedWords(clean)
    }

    /// `=?UTF-8?B?…?=` words, each holding whole characters and at most 45 bytes of text (60 of
    /// base64: 72 characters a word), joined by folding whitespace.
    static func encodedWords(_ text: String) -> String {
        var words: [String] = []
        var chunk: [UInt8] = []
        for character in text {
            let bytes = Array(String(character).utf8)
            if chunk.count + bytes.count > 45, !chunk.isEmpty {
                words.append("=?UTF-8?B?" + Data(chunk).base64EncodedString() + "?=")
                chunk = []
            }
            chunk += bytes.prefix(45)
        }
        if !chunk.isEmpty || words.isEmpty { words.append("=?UTF-8?B?" + Data(chunk).base64EncodedString() + "?=") }
        return words.joined(separator: "\r\n ")
    }

    /// Base64 in lines of 76 characters, CRLF-separated.
    static func base64Lines(_ data: Data) -> String {
        let encoded = data.base64EncodedString()
        var lines: [Substring] = []
        var index = encoded.startIndex
        while index < encoded.endIndex {
            let end = encoded.index(index, offsetBy: 76, limitedBy: encoded.endIndex) ?? encoded.endIndex
            lines.append(encoded[index..<end])
            index = end
        }
        return lines.joined(separator: "\r\n")
    }
}
