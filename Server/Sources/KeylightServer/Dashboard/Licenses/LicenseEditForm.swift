import Foundation

/// The license page's edit form: the license's whole editable state, posted together. Only what
/// differs from the license as stored becomes the edit, so saving an untouched form changes nothing.
struct LicenseEditForm: Decodable, Sendable {
    @FormText var keyTypeId: String?
    @FormText var activationLimit: String?
    @FormText var expires: String?
    @FormText var updatesUntil: String?
    @FormText var addOns: String?
    @FormText var note: String?
    @FormText var metadata: String?
    /// The license's `updated_at` when the page was drawn: a form over an older license is refused.
    @FormText var version: String?

    enum CodingKeys: String, CodingKey {
        case version = "updated_at"
        case keyTypeId = "key_type_id", activationLimit = "activation_limit", expires = "expires_on", updatesUntil = "updates_until_on"
        case addOns = "entitlements_added", note, metadata
    }

    /// The edit that turns `license` (with `metadata`) into what the form shows.
    func edit(of license: License, metadata current: [String: MetadataValue]) throws -> LicenseEdit {
        // The form holds the whole license as it was drawn; saved over a license that changed since
        // (a payment, a renewal, a bulk job, another edit), it would set those changes back.
        guard version == String(license.updatedAt) else {
            throw APIError.conflict("The license changed since this page was drawn (a payment, a renewal or another edit): reload the page and make your change again.")
        }
        var edit = LicenseEdit()
        if let keyTypeId, keyTypeId != license.keyTypeId { edit.keyTypeId = try Field.pathId(keyTypeId, "key_type_id") }
        let limit = try DashboardForm.wholeNumber(activationLimit, label: "Device limit")
        if let limit, !LicenseEdit.limitRange.contains(limit) { throw APIError.invalidRequest("Device limit must be between 1 and 100000.") }
        if limit != license.activationLimitOverride { edit.activationLimit = .set(limit) }
        if let date = try Self.day(expires, label: "Expires", keeping: license.expiresAt), date != license.expiresAt { edit.expiresAt = .set(date) }
        if expires == nil, license.expiresAt != nil { edit.expiresAt = .set(nil) }
        if let date = try Self.day(updatesUntil, label: "Updates until", keeping: license.updatesUntil), date != license.updatesUntil { edit.updatesUntil = .set(date) }
        if updatesUntil == nil, license.updatesUntil != nil { edit.updatesUntil = .set(nil) }
        let wanted = Set((addOns ?? "").split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\n" }).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        let have = Set(license.addedEntitlementCodes)
        (edit.entitlementsAdd, edit.entitlementsRemove) = try Field.entitlementChanges(add: wanted.subtracting(have).sorted(), remove: have.subtracting(wanted).sorted())
        let text = try note.flatMap { try Field.note($0) }
        if text != license.note { edit.note = .set(text) }
        var patch: [String: MetadataValue?] = [:]
        let lines = (metadata ?? "").split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        var wantedMetadata: [String: MetadataValue] = [:]
        for line in lines {
            guard let equals = line.firstIndex(of: "=") else { throw APIError.invalidRequest("Metadata lines are key=value.") }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            wantedMetadata[key] = .string(line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces))
        }
        for (key, value) in wantedMetadata where current[key]?.text != value.text { patch[key] = value }
        for key in current.keys where wantedMetadata[key] == nil { patch[key] = .some(nil) }
        if !patch.isEmpty { edit.metadata = .set(try Field.metadata(patch)) }
        return edit
    }

    /// A `yyyy-mm-dd` day as the end of that day (UTC); the stored time when the day is the one
    /// it already has (the form shows days, the license keeps seconds).
    static func day(_ text: String?, label: String, keeping current: Int64?) throws -> Int64? {
        guard let text else { return nil }
        if let current, DashboardFormat.day(current) == text { return current }
        let parts = text.split(separator: "-").compactMap { Int($0) }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        guard parts.count == 3, (1970...9999).contains(parts[0]),
              let date = calendar.date(from: DateComponents(year: parts[0], month: parts[1], day: parts[2], hour: 23, minute: 59, second: 59)),
              DashboardFormat.day(Int64(date.timeIntervalSince1970)) == text else {
            throw APIError.invalidRequest("\(label) must be a date (yyyy-mm-dd).")
        }
        return Int64(date.timeIntervalSince1970)
    }
}

/// The renew form: days, basis and field, as the API takes them.
struct LicenseRenewForm: Decodable, Sendable {
    @FormText var days: String?
    @FormText var basis: String?
    @FormText var field: String?

    func renewal() throws -> LicenseEdit.Renewal {
        try RenewLicenseRequest(days: try DashboardForm.wholeNumber(days, label: "Days"), basis: basis, field: field).renewal()
    }
}

/// What the license page's edit form shows.
struct LicenseEditView: Sendable {
    struct Option: Sendable {
        var id: String
        var label: String
        var selected: Bool
    }

    var keyTypes: [Option]
    /// The license's `updated_at`, sent back with the form.
    var version: String
    var limitOverride: String
    var keyTypeLimit: Int
    var expiresOn: String
    var updatesUntilOn: String
    var addOns: String
    var keyTypeEntitlements: String
    var note: String
    var metadata: String
    /// "3 devices are in use, over the limit of 2: …", or nil.
    var overLimit: String?

    init(license: License, keyType: KeyType?, keyTypes: [KeyType], metadata: [String: MetadataValue]) {
        version = String(license.updatedAt)
        self.keyTypes = keyTypes.map { Option(id: $0.id, label: "\($0.displayName) (\($0.id))", selected: $0.id == license.keyTypeId) }
        limitOverride = license.activationLimitOverride.map(String.init) ?? ""
        keyTypeLimit = keyType?.activationLimit ?? 0
        expiresOn = license.expiresAt.map(DashboardFormat.day) ?? ""
        updatesUntilOn = license.updatesUntil.map(DashboardFormat.day) ?? ""
        addOns = license.addedEntitlementCodes.joined(separator: ", ")
        keyTypeEntitlements = keyType.map { $0.entitlementCodes.joined(separator: ", ") } ?? ""
        note = license.note ?? ""
        self.metadata = metadata.keys.sorted().map { "\($0)=\(metadata[$0]!.text)" }.joined(separator: "\n")
        let limit = license.activationLimitOverride ?? keyType?.activationLimit ?? 0
        overLimit = license.activeInstances > limit && keyType != nil
            ? "\(license.activeInstances) devices are in use, over this license's limit of \(limit). None was freed; \(Self.refusedUntil(limit))."
            : nil
    }

    /// "new activations are refused until fewer than 3 are in use" (or "until no device is", for a limit of 1).
    static func refusedUntil(_ limit: Int) -> String {
        limit <= 1 ? "new activations are refused until no device is in use" : "new activations are refused until fewer than \(limit) are in use"
    }
}
