import SQLKit

extension Migration {
    /// Hashes of keys replaced by a remint, so the devices still holding one get a verdict
    /// (422 `LICENSE_REVOKED`) instead of the 404 that clients treat as a configuration error
    /// and ride out (protocol 6.1): a reminted key, often a leaked one, stops working at once.
    static let replacedLicenseKeys = Migration(name: "0007_replaced_license_keys") { db, _ in
        try await db.create(table: "replaced_license_keys")
            .column("key_hash", type: .text, .key)
            .column("license_id", type: .text, .notNull)
            .column("tenant_id", type: .text, .notNull)
            .column("product_id", type: .text, .notNull)
            .column("replaced_at", type: .bigint, .notNull)
            .run()
    }
}
