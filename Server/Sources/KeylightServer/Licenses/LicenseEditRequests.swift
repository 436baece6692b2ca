import Foundation

/// A field that may be absent (keep), null (clear) or a value: `Optional<Optional<T>>` read so
/// that absence and `null` stay apart.
extension KeyedDecodingContainer {
    func nullable<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T?? {
        guard contains(key) else { return nil }
        return .some(try decodeNil(forKey: key) ? nil : try decode(T.self, forKey: key))
    }
}

/// `PATCH …/licenses/{id}`. Every field is optional; absent keeps, `null` clears where a field may
/// be null (`activation_limit` goes back to the key type's).
struct UpdateLicenseRequest: Decodable, Sendable {
    var key_type_id: String?
    var activation_limit: Int??
    var expires_at: Int64??
    var updates_until: Int64??
    var entitlements_add: [String]?
    var entitlements_remove: [String]?
    var customer_email: String??
    var note: String??
    var metadata: [String: MetadataValue?]??

    enum CodingKeys: String, CodingKey {
        case key_type_id, activation_limit, expires_at, updates_until, entitlements_add, entitlements_remove, customer_email, note, metadata
    }

    init() {}

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        key_type_id = try c.decodeIfPresent(String.self, forKey: .key_type_id)
        activation_limit = try c.nullable(Int.self, forKey: .activation_limit)
        expires_at = try c.nullable(Int64.self, forKey: .expires_at)
        updates_until = try c.nullable(Int64.self, forKey: .updates_until)
        entitlements_add = try c.decodeIfPresent([String].self, forKey: .entitlements_add)
        entitlements_remove = try c.decodeIfPresent([String].self, forKey: .entitlements_remove)
        customer_email = try c.nullable(String.self, forKey: .customer_email)
        note = try c.nullable(String.self, forKey: .note)
        metadata = try c.nullable([String: MetadataValue?].self, forKey: .metadata)
    }

    /// The edit it asks for, every field checked (400 `INVALID_REQUEST` naming the field).
    func edit() throws -> LicenseEdit {
        var edit = LicenseEdit()
        edit.keyTypeId = try key_type_id.map { try Field.pathId($0, "key_type_id") }
        if let limit = activation_limit {
            edit.activationLimit = .set(try limit.map { try Field.integer($0, "activation_limit", in: LicenseEdit.limitRange) })
        }
        if let date = expires_at { edit.expiresAt = .set(try date.map { try Field.date($0, "expires_at") }) }
        if let date = updates_until { edit.updatesUntil = .set(try date.map { try Field.date($0, "updates_until") }) }
        (edit.entitlementsAdd, edit.entitlementsRemove) = try Field.entitlementChanges(add: entitlements_add, remove: entitlements_remove)
        if let email = customer_email { edit.customerEmail = .set(try email.flatMap { try Field.email($0) }) }
        if let text = note { edit.note = .set(try text.flatMap { try Field.note($0) }) }
        if let metadata { edit.metadata = .set(try metadata.map { try Field.metadata($0) }) }
        guard !edit.isEmpty else {
            throw APIError.invalidRequest("Nothing to change: send key_type_id, activation_limit, expires_at, updates_until, entitlements_add, entitlements_remove, customer_email, note and/or metadata.")
        }
        return edit
    }
}

/// `POST …/licenses/{id}/renew` (and a bulk change's `renew`): `{"days", "basis", "field"}`.
struct RenewLicenseRequest: Decodable, Sendable {
    var days: Int?
    /// `from_expiry` (the default), `from_now` or `from_now_if_expired`.
    var basis: String?
    /// `expires_at` (the default) or `updates_until`.
    var field: String?

    func renewal() throws -> LicenseEdit.Renewal {
        let days = try Field.integer(days, "days", in: 1...36_500)
        let basis = try basis.map { text in
            guard let basis = LicenseEdit.Renewal.Basis(rawValue: text) else {
                throw APIError.invalidRequest("Field basis must be from_expiry, from_now or from_now_if_expired.")
            }
            return basis
        } ?? .fromExpiry
        let field = try field.map { text in
            guard let field = LicenseEdit.Renewal.Field(rawValue: text) else { throw APIError.invalidRequest("Field field must be expires_at or updates_until.") }
            return field
        } ?? .expiresAt
        return LicenseEdit.Renewal(days: days, basis: basis, field: field)
    }
}

extension Field {
    /// The latest date a license may carry (the end of the year 9999).
    static let latestDate: Int64 = 253_402_300_799

    static func date(_ value: Int64, _ name: String) throws(APIError) -> Int64 {
        guard (0...latestDate).contains(value) else { throw .invalidRequest("Field \(name) is out of range.") }
        return value
    }

    static func expiresFrom(_ value: String?) throws(APIError) -> KeyType.ExpiresFrom {
        guard let value else { return .purchase }
        guard let parsed = KeyType.ExpiresFrom(rawValue: value) else { throw .invalidRequest("Field expires_from must be purchase or first_activation.") }
        return parsed
    }

    /// Add-on codes to add and remove: each a valid entitlement code (never `updates-until:…`,
    /// which the license's `updates_until` signs), and no code in both lists.
    static func entitlementChanges(add: [String]?, remove: [String]?) throws -> ([String], [String]) {
        let added = try add.map { try entitlements($0, name: "entitlements_add") } ?? []
        let removed = try remove.map { try entitlements($0, name: "entitlements_remove") } ?? []
        if let both = Set(added).intersection(removed).sorted().first {
            throw APIError.invalidRequest("Entitlement \(both) is both in entitlements_add and entitlements_remove.")
        }
        return (added, removed)
    }

    /// The developer's note: up to 2,000 bytes; line breaks and tabs are kept, other control
    /// characters refused.
    static func note(_ value: String) throws(APIError) -> String? {
        guard value.utf8.count <= 2_000 else { throw .invalidRequest("Field note is longer than 2000 bytes.") }
        guard !containsControlCharacter(value.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\t", with: " ")) else {
            throw .invalidRequest("Field note contains control characters.")
        }
        return value.isEmpty ? nil : value
    }

    /// A metadata patch: at most ``MetadataValue/maxKeys`` keys of `[A-Za-z0-9_.-]` (1-64),
    /// strings up to 500 bytes without control characters, finite numbers and booleans.
    static func metadata(_ patch: [String: MetadataValue?]) throws(APIError) -> [String: MetadataValue?] {
        guard patch.count <= MetadataValue.maxKeys else { throw .invalidRequest("Field metadata has more than \(MetadataValue.maxKeys) keys.") }
        for (key, value) in patch {
            try metadataKey(key)
            switch value {
            case .string(let text)?:
                guard text.utf8.count <= MetadataValue.maxStringBytes else { throw .invalidRequest("Field metadata.\(key) is longer than \(MetadataValue.maxStringBytes) bytes.") }
                guard !containsControlCharacter(text) else { throw .invalidRequest("Field metadata.\(key) contains control characters.") }
            case .number(let number)?:
                guard number.isFinite else { throw .invalidRequest("Field metadata.\(key) is not a finite number.") }
            default: break
            }
        }
        return patch
    }

    static func metadataKey(_ key: String) throws(APIError) {
        guard (1...MetadataValue.maxKeyBytes).contains(key.utf8.count), key.utf8.allSatisfy({ byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F || byte == 0x2E || byte == 0x2D
        }) else {
            throw .invalidRequest("Metadata keys must be 1-\(MetadataValue.maxKeyBytes) characters of A-Z a-z 0-9 _ . -")
        }
    }
}
