import Foundation

/// One change to a license, checked: what `PATCH …/licenses/{id}`, `renew` and each license of a
/// bulk job apply. It is applied to the license as read and locked inside the transaction that
/// writes it (``apply(to:metadata:keyTypes:now:)``), so two edits never lose each other's fields,
/// and a bulk job's `limit_add` adds to the limit as it is at that moment.
struct LicenseEdit: Sendable, Equatable {
    /// Absent fields keep what is stored; `.set(nil)` clears a field that may be null.
    enum Change<Value: Sendable & Equatable>: Sendable, Equatable {
        case keep
        case set(Value)
    }

    var keyTypeId: String?
    var activationLimit: Change<Int?> = .keep
    /// Added to the effective limit (the override, else the key type's); the result is the override.
    var limitAdd: Int?
    var expiresAt: Change<Int64?> = .keep
    var updatesUntil: Change<Int64?> = .keep
    var renewal: Renewal?
    var entitlementsAdd: [String] = []
    var entitlementsRemove: [String] = []
    var customerEmail: Change<String?> = .keep
    var note: Change<String?> = .keep
    /// A JSON merge patch of the metadata: a key set to nil is removed; `.set(nil)` clears it all.
    var metadata: Change<[String: MetadataValue?]?> = .keep

    /// Another period on one of a license's dates (`POST …/renew`, a bulk `renew`).
    struct Renewal: Sendable, Equatable {
        enum Basis: String, Sendable, CaseIterable {
            case fromExpiry = "from_expiry", fromNow = "from_now", fromNowIfExpired = "from_now_if_expired"
        }

        enum Field: String, Sendable, CaseIterable {
            case expiresAt = "expires_at", updatesUntil = "updates_until"
        }

        var days: Int
        var basis: Basis
        var field: Field

        /// The new date, or nil when `fromExpiry` has no date to extend (a lifetime license, or
        /// updates without a bound): nothing to renew.
        func date(from current: Int64?, now: Int64) -> Int64? {
            let period = Int64(days) * 86_400
            switch basis {
            case .fromExpiry: return current.map { $0 + period }
            case .fromNow: return now + period
            case .fromNowIfExpired:
                guard let current else { return now + period }
                return max(current, now) + period
            }
        }
    }

    /// What is known of the product's key types when an edit is applied.
    struct KeyTypes: Sendable {
        var byId: [String: KeyType]
        init(_ keyTypes: [KeyType]) { byId = Dictionary(keyTypes.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first }) }
        subscript(id: String) -> KeyType? { byId[id] }
    }

    /// Why an edit cannot be applied to one license (the API answers it as a 422).
    struct Refusal: Error, Sendable, Equatable {
        var code: String
        var message: String
        static func nothingToRenew(_ field: Renewal.Field) -> Self {
            Refusal(code: "NOTHING_TO_RENEW", message: "The license has no \(field.rawValue) to extend from (it never ends): renew with basis from_now to set one.")
        }
    }

    /// The result of applying an edit: the license and metadata to write, and what changed, field
    /// by field, as `[field: [from, to]]` (empty: nothing to write).
    struct Outcome: Sendable {
        var license: License
        var metadata: [String: MetadataValue]
        var changes: [String: [String]]
        var metadataChanged: Bool
        var renewed: Bool
    }

    var isEmpty: Bool { self == LicenseEdit() }

    /// The largest device limit a license may have, as for key types.
    static let limitRange = 1...100_000

    func apply(to old: License, metadata oldMetadata: [String: MetadataValue], keyTypes: KeyTypes, now: Int64) throws(Refusal) -> Outcome {
        var license = old
        var changes: [String: [String]] = [:]
        func note<T>(_ field: String, _ from: T?, _ to: T?) where T: Equatable & CustomStringConvertible {
            guard from != to else { return }
            changes[field] = [from?.description ?? "null", to?.description ?? "null"]
        }
        if let keyTypeId, keyTypeId != old.keyTypeId {
            guard keyTypes[keyTypeId] != nil else {
                throw Refusal(code: "UNKNOWN_KEY_TYPE", message: "Key type \(keyTypeId) is not one of this product's.")
            }
            license.keyTypeId = keyTypeId
        }
        let keyType = keyTypes[license.keyTypeId]
        if case .set(let limit) = activationLimit { license.activationLimitOverride = limit }
        if let limitAdd {
            let base = license.activationLimitOverride ?? keyType?.activationLimit ?? 1
            let raised = base + limitAdd
            guard Self.limitRange.contains(raised) else {
                throw Refusal(code: "LIMIT_OUT_OF_RANGE", message: "limit_add would make the limit \(raised); it must stay between 1 and 100000.")
            }
            license.activationLimitOverride = raised
        }
        if case .set(let date) = expiresAt { license.expiresAt = date; license.startsOnActivationFlag = date == nil ? old.startsOnActivationFlag : nil }
        if case .set(let date) = updatesUntil { license.updatesUntil = date }
        var renewed = false
        if let renewal {
            let current = renewal.field == .expiresAt ? license.expiresAt : license.updatesUntil
            guard let date = renewal.date(from: current, now: now) else { throw .nothingToRenew(renewal.field) }
            guard date <= Field.latestDate else {
                throw Refusal(code: "DATE_OUT_OF_RANGE", message: "The renewed \(renewal.field.rawValue) would be past the year 9999.")
            }
            switch renewal.field {
            case .expiresAt:
                license.expiresAt = date
                // A dated license no longer waits for its first activation to be dated.
                license.startsOnActivationFlag = nil
            case .updatesUntil: license.updatesUntil = date
            }
            renewed = true
        }
        if !entitlementsAdd.isEmpty || !entitlementsRemove.isEmpty {
            var added = Set(license.addedEntitlementCodes)
            let own = Set(keyType?.entitlementCodes ?? [])
            for code in entitlementsRemove where !added.contains(code) && own.contains(code) {
                throw Refusal(
                    code: "ENTITLEMENT_FROM_KEY_TYPE",
                    message: "\(code) comes with key type \(license.keyTypeId), not as an add-on: move the license to a key type without it."
                )
            }
            added.subtract(entitlementsRemove)
            added.formUnion(entitlementsAdd)
            license.entitlementsAdded = added.isEmpty ? nil : added.sorted().joined(separator: ",")
        }
        if case .set(let email) = customerEmail { license.customerEmail = email }
        if case .set(let text) = self.note { license.note = text }
        var newMetadata = oldMetadata
        switch metadata {
        case .keep: break
        case .set(.none): newMetadata = [:]
        case .set(.some(let patch)):
            for (key, value) in patch {
                if let value { newMetadata[key] = value } else { newMetadata[key] = nil }
            }
            guard newMetadata.count <= MetadataValue.maxKeys else {
                throw Refusal(code: "METADATA_TOO_LARGE", message: "A license keeps at most \(MetadataValue.maxKeys) metadata keys.")
            }
        }
        note("key_type_id", old.keyTypeId, license.keyTypeId)
        note("activation_limit_override", old.activationLimitOverride, license.activationLimitOverride)
        note("expires_at", old.expiresAt, license.expiresAt)
        note("updates_until", old.updatesUntil, license.updatesUntil)
        note("entitlements_added", old.entitlementsAdded, license.entitlementsAdded)
        note("customer_email", old.customerEmail, license.customerEmail)
        // The note's text may be long and private: the change records that it changed, not what it says.
        if old.note != license.note { changes["note"] = [old.note == nil ? "null" : "set", license.note == nil ? "null" : "set"] }
        note("starts_on_activation", old.startsOnActivationFlag ?? false, license.startsOnActivationFlag ?? false)
        let metadataChanged = newMetadata != oldMetadata
        if metadataChanged { changes["metadata"] = [MetadataValue.summary(oldMetadata), MetadataValue.summary(newMetadata)] }
        if !changes.isEmpty { license.updatedAt = now }
        return Outcome(license: license, metadata: newMetadata, changes: changes, metadataChanged: metadataChanged, renewed: renewed)
    }
}

/// A metadata value: a string, a number or a boolean (a flat object, so it can be searched).
enum MetadataValue: Sendable, Equatable, Codable {
    case string(String)
    case integer(Int64)
    case number(Double)
    case bool(Bool)

    static let maxKeys = 32
    static let maxKeyBytes = 64
    static let maxStringBytes = 500

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        }
    }

    /// How it is stored and searched: strings as they are, the others as their JSON text, with
    /// the kind in the first character so `"3"` and `3` stay apart (`s`, `i`, `n`, `b`).
    var stored: String {
        switch self {
        case .string(let value): "s" + value
        case .integer(let value): "i\(value)"
        case .number(let value): "n\(value)"
        case .bool(let value): value ? "btrue" : "bfalse"
        }
    }

    init?(stored: String) {
        guard let kind = stored.first else { return nil }
        let rest = String(stored.dropFirst())
        switch kind {
        case "s": self = .string(rest)
        case "i": guard let value = Int64(rest) else { return nil }; self = .integer(value)
        case "n": guard let value = Double(rest) else { return nil }; self = .number(value)
        case "b": self = .bool(rest == "true")
        default: return nil
        }
    }

    /// The stored forms a query's `metadata.<key>=<text>` matches: the string, and the number
    /// or boolean it spells.
    static func storedCandidates(forQuery text: String) -> [String] {
        var candidates = ["s" + text]
        if let value = Int64(text) { candidates.append("i\(value)") } else if let value = Double(text), value.isFinite { candidates.append("n\(value)") }
        if text == "true" || text == "false" { candidates.append("b" + text) }
        return candidates
    }

    /// `key=value, …` in key order, for the audit log.
    static func summary(_ metadata: [String: MetadataValue]) -> String {
        metadata.isEmpty ? "{}" : metadata.keys.sorted().map { "\($0)=\(metadata[$0]!.text)" }.joined(separator: ", ")
    }

    var text: String {
        switch self {
        case .string(let value): value
        case .integer(let value): "\(value)"
        case .number(let value): "\(value)"
        case .bool(let value): "\(value)"
        }
    }
}
