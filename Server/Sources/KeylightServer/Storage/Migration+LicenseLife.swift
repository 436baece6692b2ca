import SQLKit

extension Migration {
    /// A license's life after the sale (issue 49): edits (a limit override, add-on entitlements, a
    /// note, searchable metadata), expiry that starts on first activation, and bulk changes run as
    /// resumable jobs. Every column is new and nullable, so processes of the previous release keep
    /// inserting and reading licenses as before (they ignore the override until they are replaced).
    static let licenseLife = Migration(name: "0017_license_life") { db, capabilities in
        try await db.addColumns(to: "licenses", [
            // nil: the key type's limit.
            ("activation_limit_override", .int),
            // Comma-separated add-on codes, on top of the key type's.
            ("entitlements_added", .text),
            ("note", .text),
            // True until the first device activates a license whose key type starts it then.
            ("starts_on_activation", .boolean),
        ])
        // `purchase` (nil) or `first_activation`.
        try await db.addColumns(to: "key_types", [("expires_from", .text)])
        // A license's metadata, one row per key, so it can be searched with plain indexed SQL on
        // both databases.
        try await db.create(table: "license_metadata")
            .column("license_id", type: .text, .notNull)
            .column("tenant_id", type: .text, .notNull)
            .column("product_id", type: .text, .notNull)
            .column("key", type: .text, .notNull)
            .column("value", type: .text, .notNull)
            .primaryKey("license_id", "key")
            .run()
        try await db.create(index: "license_metadata_by_value").on("license_metadata")
            .column("tenant_id").column("product_id").column("key").column("value").run()
        try await db.create(index: "licenses_by_key_type").on("licenses").column("tenant_id").column("product_id").column("key_type_id").run()
        // A bulk change: the licenses it selected are listed when it is created (`bulk_job_items`),
        // and each is marked applied in the transaction that changes it, so a job resumed after a
        // crash never applies twice to one license.
        try await db.create(table: "bulk_jobs")
            .column("id", type: .text, .key)
            .column("tenant_id", type: .text, .notNull)
            .column("product_id", type: .text, .notNull)
            .column("filter", type: .text, .notNull)
            .column("change", type: .text, .notNull)
            .column("actor", type: .text, .notNull)
            .column("state", type: .text, .notNull)
            .column("total", type: .int, .notNull)
            .column("done", type: .int, .notNull)
            .column("created_at", type: .bigint, .notNull)
            .column("updated_at", type: .bigint, .notNull)
            .run()
        try await db.create(index: "bulk_jobs_by_state").on("bulk_jobs").column("state").run()
        try await db.create(table: "bulk_job_items")
            .column("job_id", type: .text, .notNull)
            .column("license_id", type: .text, .notNull)
            .column("applied_at", type: .bigint)
            // `updated`, `unchanged`, `gone`, or the refusal's code (`NOTHING_TO_RENEW`, …).
            .column("outcome", type: .text)
            .primaryKey("job_id", "license_id")
            .run()
    }
}
