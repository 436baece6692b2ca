import SQLKit

extension Database {
    /// What became of an edit of one license.
    enum LicenseEditResult: Sendable {
        case notFound
        case refused(LicenseEdit.Refusal)
        /// Applied (or nothing to change: `outcome.changes` is empty and nothing was written).
        case edited(LicenseEdit.Outcome)
        /// A bulk job's item that an earlier run (before a crash) already applied.
        case alreadyApplied
    }

    /// Applies `edit` to one license inside one transaction: the license is read and locked,
    /// the edit decided on it (``LicenseEdit/apply(to:metadata:keyTypes:now:)``), and the row, its
    /// metadata, the audit entry and the webhook event (`license.updated`, or `license.renewed`
    /// for a renewal) written together. With `bulkJob`, the job's item for this license is marked
    /// applied in the same transaction, and a license it already marks is left alone.
    func editLicense(
        tenantId: String, productId: String, id: String, edit: LicenseEdit, keyTypes: LicenseEdit.KeyTypes,
        now: Int64, actor: AuditActor, bulkJob: String? = nil
    ) async throws -> LicenseEditResult {
        let outbox = self.outbox
        let lock = SQLQueryString(capabilities.rowLockClause.map { " \($0)" } ?? "")
        return try await write { db in
            guard let bulkJob else {
                return try await Self.editLicense(db, tenantId: tenantId, productId: productId, id: id, edit: edit, keyTypes: keyTypes, now: now, actor: actor, lock: lock, outbox: outbox)
            }
            guard try await db.raw("""
                UPDATE bulk_job_items SET applied_at = \(bind: now)
                WHERE job_id = \(bind: bulkJob) AND license_id = \(bind: id) AND applied_at IS NULL RETURNING license_id
                """).first() != nil else { return .alreadyApplied }
            let result = try await Self.editLicense(
                db, tenantId: tenantId, productId: productId, id: id, edit: edit, keyTypes: keyTypes, now: now, actor: actor, lock: lock, outbox: outbox,
                details: ["bulk_job": bulkJob]
            )
            let outcome = switch result {
            case .notFound, .alreadyApplied: "gone"
            case .refused(let refusal): refusal.code
            case .edited(let outcome): outcome.changes.isEmpty ? "unchanged" : "updated"
            }
            try await db.raw("UPDATE bulk_job_items SET outcome = \(bind: outcome) WHERE job_id = \(bind: bulkJob) AND license_id = \(bind: id)").run()
            return result
        }
    }

    /// ``editLicense(tenantId:productId:id:edit:keyTypes:now:actor:bulkJob:)`` inside a transaction
    /// already open (a payment's event applies its change in the transaction that records it);
    /// `details` are added to the audit entry.
    static func editLicense(
        _ db: any SQLDatabase, tenantId: String, productId: String, id: String, edit: LicenseEdit, keyTypes: LicenseEdit.KeyTypes,
        now: Int64, actor: AuditActor, lock: SQLQueryString, outbox: WebhookOutbox?, details extra: [String: String] = [:]
    ) async throws -> LicenseEditResult {
        guard let old = try await db.raw("""
            SELECT \(Self.licenseColumns) FROM licenses
            WHERE id = \(bind: id) AND tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)\(lock)
            """).first(decoding: License.self) else { return .notFound }
        let oldMetadata = try await metadata(db, licenseIds: [id])[id] ?? [:]
        let outcome: LicenseEdit.Outcome
        do {
            outcome = try edit.apply(to: old, metadata: oldMetadata, keyTypes: keyTypes, now: now)
        } catch {
            return .refused(error)
        }
        guard !outcome.changes.isEmpty else { return .edited(outcome) }
        let license = outcome.license
        try await db.raw("""
            UPDATE licenses SET key_type_id = \(bind: license.keyTypeId), activation_limit_override = \(bind: license.activationLimitOverride),
                expires_at = \(bind: license.expiresAt), updates_until = \(bind: license.updatesUntil),
                entitlements_added = \(bind: license.entitlementsAdded), customer_email = \(bind: license.customerEmail),
                note = \(bind: license.note), starts_on_activation = \(bind: license.startsOnActivationFlag), updated_at = \(bind: now)
            WHERE id = \(bind: id)
            """).run()
        if outcome.metadataChanged {
            try await db.raw("DELETE FROM license_metadata WHERE license_id = \(bind: id)").run()
            for (key, value) in outcome.metadata.sorted(by: { $0.key < $1.key }) {
                try await db.raw("""
                    INSERT INTO license_metadata (license_id, tenant_id, product_id, key, value)
                    VALUES (\(bind: id), \(bind: tenantId), \(bind: productId), \(bind: key), \(bind: value.stored))
                    """).run()
            }
        }
        var details = outcome.changes.mapValues { "\($0[0]) -> \($0[1])" }
        details.merge(extra) { $1 }
        try await record(
            ChangeLog(tenantId: tenantId, now: now).licenseEdited(license, changes: outcome.changes, renewed: outcome.renewed, actor: actor, details: details),
            on: db, outbox: outbox
        )
        return .edited(outcome)
    }

    /// The metadata of each license named (licenses without any are absent).
    func metadata(licenseIds: [String]) async throws -> [String: [String: MetadataValue]] {
        try await Self.metadata(sql, licenseIds: licenseIds)
    }

    static func metadata(_ db: any SQLDatabase, licenseIds: [String]) async throws -> [String: [String: MetadataValue]] {
        guard !licenseIds.isEmpty else { return [:] }
        var result: [String: [String: MetadataValue]] = [:]
        // Pages of at most 500 ids: a page of licenses is never longer.
        for start in stride(from: 0, to: licenseIds.count, by: 500) {
            let ids = licenseIds[start..<min(start + 500, licenseIds.count)]
            var list = SQLQueryString("")
            for (index, id) in ids.enumerated() { list += index == 0 ? "\(bind: id)" : ", \(bind: id)" }
            let rows = try await db.raw("SELECT license_id, key, value FROM license_metadata WHERE license_id IN (\(list))").all()
            for row in rows {
                let licenseId = try row.decode(column: "license_id", as: String.self)
                let key = try row.decode(column: "key", as: String.self)
                guard let value = MetadataValue(stored: try row.decode(column: "value", as: String.self)) else { continue }
                result[licenseId, default: [:]][key] = value
            }
        }
        return result
    }
}
