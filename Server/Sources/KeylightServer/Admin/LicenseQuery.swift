import KeylightCore

/// A license list's filters and page, checked: the query string of `GET …/licenses`, the
/// dashboard's license list and its CSV export. Empty parameters count as absent.
struct LicenseQuery: Sendable {
    var email: String?
    var status: LicenseStatus?
    /// The last four characters of a key, upper-cased.
    var keySuffix: String?
    /// Licenses per page, 1-500.
    var limit = 50
    /// The id the page starts after (the decoded cursor).
    var afterId: String?
    var keyTypeId: String?
    /// `metadata.<key>=<value>` filters: every one must match.
    var metadata: [(key: String, value: String)] = []

    /// Reads `email`, `status`, `key_suffix`, `limit` (unless `fixedLimit` is given) and `cursor`
    /// through `value`; a bad one is a 400 that names it.
    init(reading value: (String) -> String?, fixedLimit: Int? = nil, parameters: [(String, String)] = []) throws {
        func present(_ name: String) -> String? { value(name).flatMap { $0.isEmpty ? nil : $0 } }
        keyTypeId = try present("key_type_id").map { try Field.pathId($0, "key_type_id") }
        for (name, text) in parameters where name.hasPrefix("metadata.") {
            let key = String(name.dropFirst("metadata.".count))
            try Field.metadataKey(key)
            guard text.utf8.count <= MetadataValue.maxStringBytes else { throw APIError.invalidRequest("metadata.\(key) is longer than \(MetadataValue.maxStringBytes) bytes.") }
            metadata.append((key, text))
        }
        guard metadata.count <= 8 else { throw APIError.invalidRequest("At most 8 metadata filters.") }
        email = try present("email").flatMap { try Field.email($0) }
        status = try present("status").map { text in
            guard let status = LicenseStatus(rawValue: text) else { throw APIError.invalidRequest("status must be active, suspended or revoked.") }
            return status
        }
        keySuffix = try present("key_suffix").map { text in
            let upper = text.uppercased()
            guard upper.utf8.count == 4, LicenseKey.isValid("AAAA-0000-0000-0000-" + upper) else {
                throw APIError.invalidRequest("key suffix must be the last 4 characters of a key.")
            }
            return upper
        }
        if let fixedLimit {
            limit = fixedLimit
        } else if let text = present("limit") {
            guard let value = Int(text), (1...500).contains(value) else { throw APIError.invalidRequest("limit must be 1-500.") }
            limit = value
        }
        afterId = try present("cursor").map { try Self.afterId(cursor: $0) }
    }

    /// The id a cursor this server issued names.
    static func afterId(cursor: String) throws -> String {
        guard let raw = Base64.decode(cursor), let id = String(data: raw, encoding: .utf8), id.utf8.count <= 64 else {
            throw APIError.invalidRequest("cursor is not one this server issued.")
        }
        return id
    }

    /// The cursor of the page after one that ended with `lastId`.
    static func cursor(after lastId: String) -> String {
        Base64.encodeURLSafe(Array(lastId.utf8))
    }
}
