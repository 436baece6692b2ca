import Foundation

/// `POST …/licenses/bulk`: `{"filter": {…}, "change": {…}, "dry_run": bool}`.
struct BulkLicenseRequest: Decodable, Sendable {
    var filter: BulkFilterRequest?
    var change: BulkChangeRequest?
    var dry_run: Bool?
}

/// Which licenses a bulk job selects; every field given must match. `{}` selects every license
/// of the product.
struct BulkFilterRequest: Codable, Sendable, Equatable {
    var key_type_id: String?
    var status: String?
    /// Unix seconds: licenses created before (exclusive) / at or after this time.
    var created_before: Int64?
    var created_after: Int64?
    /// `{key: value}`: the license's metadata has each key with that value (as the list's
    /// `metadata.<key>=<value>` filters match it).
    var metadata: [String: String]?

    /// The filter, checked.
    func checked() throws -> BulkFilter {
        var filter = BulkFilter()
        filter.keyTypeId = try key_type_id.map { try Field.pathId($0, "filter.key_type_id") }
        filter.status = try status.map { text in
            guard let status = LicenseStatus(rawValue: text) else { throw APIError.invalidRequest("Field filter.status must be active, suspended or revoked.") }
            return status
        }
        filter.createdBefore = try created_before.map { try Field.date($0, "filter.created_before") }
        filter.createdAfter = try created_after.map { try Field.date($0, "filter.created_after") }
        guard (metadata?.count ?? 0) <= 8 else { throw APIError.invalidRequest("Field filter.metadata has more than 8 keys.") }
        for (key, value) in (metadata ?? [:]).sorted(by: { $0.key < $1.key }) {
            try Field.metadataKey(key)
            guard value.utf8.count <= MetadataValue.maxStringBytes else { throw APIError.invalidRequest("Field filter.metadata.\(key) is too long.") }
            filter.metadata.append((key, value))
        }
        return filter
    }
}

/// A bulk job's selection, checked.
struct BulkFilter: Sendable {
    var keyTypeId: String?
    var status: LicenseStatus?
    var createdBefore: Int64?
    var createdAfter: Int64?
    var metadata: [(key: String, value: String)] = []
}

/// What a bulk job does to each license it selected.
struct BulkChangeRequest: Codable, Sendable, Equatable {
    var key_type_id: String?
    /// A new override for every license (null: back to the key type's).
    var activation_limit: Int??
    /// Added to each license's effective limit (negative lowers it; never below 1).
    var limit_add: Int?
    var renew: BulkRenewRequest?
    var entitlements_add: [String]?
    var entitlements_remove: [String]?

    enum CodingKeys: String, CodingKey {
        case key_type_id, activation_limit, limit_add, renew, entitlements_add, entitlements_remove
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        key_type_id = try c.decodeIfPresent(String.self, forKey: .key_type_id)
        if c.contains(.activation_limit) {
            activation_limit = .some(try c.decodeNil(forKey: .activation_limit) ? nil : try c.decode(Int.self, forKey: .activation_limit))
        }
        limit_add = try c.decodeIfPresent(Int.self, forKey: .limit_add)
        renew = try c.decodeIfPresent(BulkRenewRequest.self, forKey: .renew)
        entitlements_add = try c.decodeIfPresent([String].self, forKey: .entitlements_add)
        entitlements_remove = try c.decodeIfPresent([String].self, forKey: .entitlements_remove)
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(key_type_id, forKey: .key_type_id)
        if let activation_limit {
            if let limit = activation_limit { try c.encode(limit, forKey: .activation_limit) } else { try c.encodeNil(forKey: .activation_limit) }
        }
        try c.encodeIfPresent(limit_add, forKey: .limit_add)
        try c.encodeIfPresent(renew, forKey: .renew)
        try c.encodeIfPresent(entitlements_add, forKey: .entitlements_add)
        try c.encodeIfPresent(entitlements_remove, forKey: .entitlements_remove)
    }

    /// The edit each license gets, checked (400 naming the field).
    func edit() throws -> LicenseEdit {
        var edit = LicenseEdit()
        edit.keyTypeId = try key_type_id.map { try Field.pathId($0, "change.key_type_id") }
        if let limit = activation_limit {
            guard limit_add == nil else { throw APIError.invalidRequest("Send change.activation_limit or change.limit_add, not both.") }
            edit.activationLimit = .set(try limit.map { try Field.integer($0, "change.activation_limit", in: LicenseEdit.limitRange) })
        }
        if let limit_add {
            guard limit_add != 0 else { throw APIError.invalidRequest("Field change.limit_add must not be 0.") }
            edit.limitAdd = try Field.integer(limit_add, "change.limit_add", in: -100_000...100_000)
        }
        edit.renewal = try renew.map { try RenewLicenseRequest(days: $0.days, basis: $0.basis, field: $0.field).renewal() }
        (edit.entitlementsAdd, edit.entitlementsRemove) = try Field.entitlementChanges(add: entitlements_add, remove: entitlements_remove)
        guard !edit.isEmpty else {
            throw APIError.invalidRequest("Nothing to change: send change.key_type_id, activation_limit, limit_add, renew, entitlements_add and/or entitlements_remove.")
        }
        return edit
    }
}

struct BulkRenewRequest: Codable, Sendable, Equatable {
    var days: Int?
    var basis: String?
    var field: String?
}

/// A bulk job as `POST …/licenses/bulk` (202) and `GET …/licenses/bulk/{id}` answer it.
struct BulkJobBody: Encodable {
    var id: String
    /// `running` until every selected license has been through the change, then `done`.
    var state: String
    var total: Int
    var done: Int
    /// Licenses changed, left as they were (the change was already true of them), and refused
    /// (for example `renew` from an expiry a lifetime license does not have), by code.
    var updated: Int
    var unchanged: Int
    var refused: [String: Int]
    var created_at: Int64
}

/// The answer to a dry run: how many licenses the filter selects, and the first 20 of them.
struct BulkDryRunBody: Encodable {
    var dry_run = true
    var count: Int
    var ids: [String]
}
