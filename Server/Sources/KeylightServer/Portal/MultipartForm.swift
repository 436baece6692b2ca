import Foundation

/// A posted `multipart/form-data` body (RFC 7578), as the portal's file inputs send it: the
/// fields' names and values, nothing written to disk. Hummingbird decodes only URL-encoded forms,
/// and the portal's files are a few KiB of text, so this reads a bounded body in memory and
/// refuses anything unusual (too many parts, long headers, a missing boundary) rather than guess.
struct MultipartForm: Sendable, Equatable {
    /// Field name → value. A field sent twice keeps its first value.
    private(set) var fields: [String: String] = [:]

    static let maxParts = 16
    static let maxHeaderBytes = 1_024

    /// Why a body was refused.
    struct Malformed: Error, Equatable {}

    subscript(name: String) -> String? { fields[name] }

    /// The boundary of a `multipart/form-data; boundary=…` content type (RFC 2046: 1-70
    /// characters, quoted or not), or nil for any other content type.
    static func boundary(contentType: String) -> String? {
        let parts = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let type = parts.first, type.lowercased() == "multipart/form-data" else { return nil }
        for parameter in parts.dropFirst() {
            guard let equals = parameter.firstIndex(of: "="), parameter[..<equals].lowercased() == "boundary" else { continue }
            var value = String(parameter[parameter.index(after: equals)...])
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            guard (1...70).contains(value.utf8.count), value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
            return value
        }
        return nil
    }

    init(body: [UInt8], boundary: String) throws(Malformed) {
        let delimiter = Array("--\(boundary)".utf8)
        let separator = Array("\r\n".utf8) + delimiter
        // The body opens with the first delimiter (a preamble before it is allowed and skipped).
        guard let first = body.firstRange(of: delimiter) else { throw Malformed() }
        var cursor = first.upperBound
        var parts = 0
        while true {
            // After a delimiter: `--` closes the body, CRLF opens a part.
            if body[cursor...].starts(with: [UInt8(ascii: "-"), UInt8(ascii: "-")]) { return }
            guard body[cursor...].starts(with: [13, 10]) else { throw Malformed() }
            cursor += 2
            parts += 1
            guard parts <= Self.maxParts else { throw Malformed() }
            guard let headersEnd = body[cursor...].firstRange(of: [13, 10, 13, 10]),
                  headersEnd.lowerBound - cursor <= Self.maxHeaderBytes else { throw Malformed() }
            let headers = String(decoding: body[cursor..<headersEnd.lowerBound], as: UTF8.self)
            guard let next = body[headersEnd.upperBound...].firstRange(of: separator) else { throw Malformed() }
            if let name = Self.fieldName(headers), fields[name] == nil {
                fields[name] = String(decoding: body[headersEnd.upperBound..<next.lowerBound], as: UTF8.self)
            }
            cursor = next.upperBound
        }
    }

    /// The `name` of a part's `Content-Disposition: form-data; name="…"` header.
    private static func fieldName(_ headers: String) -> String? {
        for line in headers.split(separator: "\r\n") {
            guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == "content-disposition" else { continue }
            for parameter in line[line.index(after: colon)...].split(separator: ";") {
                let trimmed = parameter.trimmingCharacters(in: .whitespaces)
                guard trimmed.hasPrefix("name=") else { continue }
                var value = String(trimmed.dropFirst(5))
                if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
                return value.isEmpty ? nil : value
            }
        }
        return nil
    }
}
