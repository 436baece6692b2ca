import SQLKit

extension Database {
    static let licenseColumns: SQLQueryString = "id, tenant_id, product_id, key_type_id, key_hash, masked_key, status, expires_at, customer_email, active_instances, created_at, updated_at, updates_until, payment_source, payment_order_id, activation_limit_override, entitlements_added, note, starts_on_activation"
    /// A license's values in ``licenseColumns`` order, bound, for an `INSERT`.
    static func licenseValues(_ license: License) -> SQLQueryString {
        """
        \(bind: license.id), \(bind: license.tenantId), \(bind: license.productId), \(bind: license.keyTypeId), \
        \(bind: license.keyHash), \(bind: license.maskedKey), \(bind: license.status.rawValue), \(bind: license.expiresAt), \
        \(bind: license.customerEmail), \(bind: license.activeInstances), \(bind: license.createdAt), \(bind: license.updatedAt), \
        \(bind: license.updatesUntil), \(bind: license.paymentSource), \(bind: license.paymentOrderId), \(bind: license.activationLimitOverride), \
        \(bind: license.entitlementsAdded), \(bind: license.note), \(bind: license.startsOnActivationFlag)
        """
    }

    static let instanceColumns: SQLQueryString = "id, license_id, name, machine_hash, active, activated_at, last_validated_at, deactivated_at, device_key, seat_expires_at"

    /// Inserts a minted license; `key` (the raw key) goes only into the `license.created` webhook,
    /// and sealed (`sealedKey`) into the row, so it can be mailed again. With `mail`, the mail that
    /// carries the key is queued in the same transaction.
    func insertLicense(_ license: License, key: String, sealedKey: String?, mail: MailRequest? = nil, actor: AuditActor) async throws {
        let outbox = self.outbox
        try await write { db in
            try await db.raw("""
                INSERT INTO licenses (\(Self.licenseColumns), sealed_key) VALUES (\(Self.licenseValues(license)), \(bind: sealedKey))
                """).run()
            if let mail {
                try await Self.enqueueMail(db, tenantId: license.tenantId, kind: mail.kind, licenseId: license.id, to: mail.to, at: license.createdAt)
            }
            try await Self.record(ChangeLog(tenantId: license.tenantId, now: license.createdAt).licenseCreated(license, key: key, actor: actor, details: [
                "product_id": license.productId, "key_type_id": license.keyTypeId, "masked_key": license.maskedKey,
                "expires_at": license.startsOnActivation ? "first activation" : license.expiresAt.map(String.init) ?? "lifetime",
                "updates_until": license.startsOnActivation ? "first activation" : license.updatesUntil.map(String.init) ?? "unbounded",
            ]), on: db, outbox: outbox)
        }
    }

    public func license(tenantId: String, productId: String, id: String) async throws -> License? {
        try await sql.raw("""
            SELECT \(Self.licenseColumns) FROM licenses WHERE id = \(bind: id) AND tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)
            """).first(decoding: License.self)
    }

    public func license(keyHash: String) async throws -> License? {
        try await sql.raw("SELECT \(Self.licenseColumns) FROM licenses WHERE key_hash = \(bind: keyHash)")
            .first(decoding: License.self)
    }

    /// A page of a product's licenses in id order, filtered by email and/or status.
    public func licenses(
        tenantId: String, productId: String, email: String?, status: LicenseStatus?, keySuffix: String? = nil,
        keyTypeId: String? = nil, metadata: [(key: String, value: String)] = [], afterId: String?, limit: Int
    ) async throws -> [License] {
        var query: SQLQueryString = "SELECT \(Self.licenseColumns) FROM licenses WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)"
        if let email { query += " AND customer_email = \(bind: email)" }
        if let keyTypeId { query += " AND key_type_id = \(bind: keyTypeId)" }
        query += Self.metadataCondition(metadata, tenantId: tenantId, productId: productId)
        if let status { query += " AND status = \(bind: status.rawValue)" }
        if let keySuffix { query += " AND masked_key LIKE \(bind: "%-" + keySuffix)" }
        if let afterId { query += " AND id > \(bind: afterId)" }
        query += " ORDER BY id LIMIT \(literal: limit)"
        return try await sql.raw(query).all(decoding: License.self)
    }

    public func instances(licenseId: String) async throws -> [Instance] {
        try await sql.raw("SELECT \(Self.instanceColumns) FROM instances WHERE license_id = \(bind: licenseId) ORDER BY activated_at, id")
            .all(decoding: Instance.self)
    }

    public func instance(id: String) async throws -> Instance? {
        try await sql.raw("SELECT \(Self.instanceColumns) FROM instances WHERE id = \(bind: id)")
            .first(decoding: Instance.self)
    }

    /// Sets an administrator's decision; nil when there is no such license.
    func setLicenseStatus(tenantId: String, productId: String, id: String, status: LicenseStatus, action: String, now: Int64, actor: AuditActor) async throws -> License? {
        let outbox = self.outbox
        return try await write { db in
            let updated = try await db.raw("""
                UPDATE licenses SET status = \(bind: status.rawValue), updated_at = \(bind: now)
                WHERE id = \(bind: id) AND tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)
                RETURNING \(Self.licenseColumns)
                """).first(decoding: License.self)
            guard let updated else { return nil }
            try await Self.record(ChangeLog(tenantId: tenantId, now: now).statusSet(updated, action: action, actor: actor), on: db, outbox: outbox)
            return updated
        }
    }

    /// Replaces a license's key (the old key stops working at once); nil when there is no such license.
    func remintLicense(tenantId: String, productId: String, id: String, keyHash: String, maskedKey: String, sealedKey: String?, now: Int64, actor: AuditActor) async throws -> License? {
        try await write { db in
            // The old key's hash is kept, so devices that still send it get a verdict, not a 404.
            try await db.raw("""
                INSERT INTO replaced_license_keys (key_hash, license_id, tenant_id, product_id, replaced_at)
                SELECT key_hash, id, tenant_id, product_id, \(bind: now) FROM licenses
                WHERE id = \(bind: id) AND tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)
                ON CONFLICT DO NOTHING
                """).run()
            let updated = try await db.raw("""
                UPDATE licenses SET key_hash = \(bind: keyHash), masked_key = \(bind: maskedKey), sealed_key = \(bind: sealedKey), updated_at = \(bind: now)
                WHERE id = \(bind: id) AND tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)
                RETURNING \(Self.licenseColumns)
                """).first(decoding: License.self)
            guard let updated else { return nil }
            try await Self.record(ChangeLog(tenantId: tenantId, now: now).keyReplaced(id, maskedKey: maskedKey, actor: actor), on: db, outbox: nil)
            return updated
        }
    }

    /// True when `keyHash` was a key of this product that a remint replaced.
    func isReplacedKey(_ keyHash: String, tenantId: String, productId: String) async throws -> Bool {
        try await sql.raw("""
            SELECT 1 AS found FROM replaced_license_keys
            WHERE key_hash = \(bind: keyHash) AND tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)
            """).first() != nil
    }

    /// ` AND …` for each `metadata.<key>=<value>` filter: the license has that key with that value
    /// (as a string, or the number or boolean the text spells).
    static func metadataCondition(_ filters: [(key: String, value: String)], tenantId: String, productId: String, license: String = "licenses.id") -> SQLQueryString {
        var condition = SQLQueryString("")
        for filter in filters {
            var values = SQLQueryString("")
            for (index, candidate) in MetadataValue.storedCandidates(forQuery: filter.value).enumerated() {
                values += index == 0 ? "\(bind: candidate)" : ", \(bind: candidate)"
            }
            condition += """
                 AND EXISTS (SELECT 1 FROM license_metadata m WHERE m.license_id = \(unsafeRaw: license) AND m.tenant_id = \(bind: tenantId)
                 AND m.product_id = \(bind: productId) AND m.key = \(bind: filter.key) AND m.value IN (\(values)))
                """
        }
        return condition
    }
}
