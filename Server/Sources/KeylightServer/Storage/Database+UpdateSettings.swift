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

/// What the update routes need of a lease's license and device.
struct LeaseHolder: Sendable {
    var tenantId: String
    var productId: String
    var status: LicenseStatus
    var expiresAt: Int64?
    var updatesUntil: Int64?
    /// Whether the lease's device is the license's and active; nil when it is not the license's.
    var instanceActive: Bool?
}

extension Database {
    /// The license with key hash `keyHash` and whether `instanceId` is its active device, in one
    /// read of the few columns the update routes check on every request.
    func leaseHolder(keyHash: String, instanceId: String) async throws -> LeaseHolder? {
        guard let row = try await sql.raw("""
            SELECT l.tenant_id, l.product_id, l.status, l.expires_at, l.updates_until, i.active AS instance_active FROM licenses l
            LEFT JOIN instances i ON i.id = \(bind: instanceId) AND i.license_id = l.id
            WHERE l.key_hash = \(bind: keyHash)
            """).first() else { return nil }
        func optional<T: Decodable>(_ column: String, _ type: T.Type) throws -> T? {
            try row.decodeNil(column: column) ? nil : try row.decode(column: column, as: type)
        }
        guard let status = LicenseStatus(rawValue: try row.decode(column: "status", as: String.self)) else { throw StorageError.corrupt("licenses.status") }
        return LeaseHolder(
            tenantId: try row.decode(column: "tenant_id", as: String.self), productId: try row.decode(column: "product_id", as: String.self),
            status: status, expiresAt: try optional("expires_at", Int64.self), updatesUntil: try optional("updates_until", Int64.self),
            instanceActive: try optional("instance_active", Bool.self)
        )
    }
}
