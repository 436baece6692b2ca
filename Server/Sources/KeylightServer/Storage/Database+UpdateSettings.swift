import SQLKit

extension Database {
    static let updateSettingsColumns: SQLQueryString = "tenant_id, product_id, public_feed, sparkle_public_key, sparkle_private_key_sealed, updated_at"

    func updateSettings(tenantId: String, productId: String) async throws -> ProductUpdateSettings? {
        try await sql.raw("""
            SELECT \(Self.updateSettingsColumns) FROM product_update_settings WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)
            """).first(decoding: ProductUpdateSettings.self)
    }

    /// Stores `initial` unless the product has settings; answers the stored ones either way, so
    /// two processes creating a key at once agree on one.
    func updateSettingsCreatingIfAbsent(_ initial: ProductUpdateSettings) async throws -> ProductUpdateSettings {
        try await write { db in
            try await db.raw("""
                INSERT INTO product_update_settings (\(Self.updateSettingsColumns)) VALUES (
                    \(bind: initial.tenantId), \(bind: initial.productId), \(bind: initial.publicFeed), \(bind: initial.sparklePublicKey),
                    \(bind: initial.sparklePrivateKeySealed), \(bind: initial.updatedAt))
                ON CONFLICT DO NOTHING
                """).run()
            guard let stored = try await db.raw("""
                SELECT \(Self.updateSettingsColumns) FROM product_update_settings
                WHERE tenant_id = \(bind: initial.tenantId) AND product_id = \(bind: initial.productId)
                """).first(decoding: ProductUpdateSettings.self) else { throw StorageError.corrupt("product_update_settings") }
            return stored
        }
    }

    /// Replaces the settings (audited as a product change).
    func saveUpdateSettings(_ settings: ProductUpdateSettings, details: [String: String], actor: AuditActor) async throws {
        try await write { db in
            try await db.raw("""
                INSERT INTO product_update_settings (\(Self.updateSettingsColumns)) VALUES (
                    \(bind: settings.tenantId), \(bind: settings.productId), \(bind: settings.publicFeed), \(bind: settings.sparklePublicKey),
                    \(bind: settings.sparklePrivateKeySealed), \(bind: settings.updatedAt))
                ON CONFLICT (tenant_id, product_id) DO UPDATE SET public_feed = \(bind: settings.publicFeed),
                    sparkle_public_key = \(bind: settings.sparklePublicKey), sparkle_private_key_sealed = \(bind: settings.sparklePrivateKeySealed),
                    updated_at = \(bind: settings.updatedAt)
                """).run()
            try await Self.audit(db, at: settings.updatedAt, actor: actor, action: "product.update", tenantId: settings.tenantId, target: settings.productId, details: details)
        }
    }
}

extension Database {
    /// The license with key hash `keyHash` and whether `instanceId` is its device and active (nil:
    /// not its device), in one read: the update routes check both on every request.
    func leaseHolder(keyHash: String, instanceId: String) async throws -> (license: License, instanceActive: Bool?)? {
        let columns = SQLQueryString(Self.licenseColumnNames.map { "l.\($0)" }.joined(separator: ", "))
        guard let row = try await sql.raw("""
            SELECT \(columns), i.active AS instance_active FROM licenses l
            LEFT JOIN instances i ON i.id = \(bind: instanceId) AND i.license_id = l.id
            WHERE l.key_hash = \(bind: keyHash)
            """).first() else { return nil }
        let license = try row.decode(model: License.self)
        let active = try row.decodeNil(column: "instance_active") ? nil : try row.decode(column: "instance_active", as: Bool.self)
        return (license, active)
    }

    static let licenseColumnNames = [
        "id", "tenant_id", "product_id", "key_type_id", "key_hash", "masked_key", "status", "expires_at", "customer_email", "active_instances",
        "created_at", "updated_at", "updates_until", "payment_source", "payment_order_id", "activation_limit_override", "entitlements_added", "note",
        "starts_on_activation",
    ]
}
