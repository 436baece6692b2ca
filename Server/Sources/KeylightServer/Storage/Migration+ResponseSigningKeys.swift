import SQLKit

extension Migration {
    /// Intermediate keys for signed responses (protocol section 3), shared by every process on
    /// the database: one per root key per day, each valid a few days.
    static let responseSigningKeys = Migration(name: "0002_response_signing_keys") { db, _ in
        try await db.create(table: "response_signing_keys")
            .column("id", type: .text, .key)
            .column("root_kid", type: .text, .notNull)
            .column("created_day", type: .bigint, .notNull)
            .column("expiry_day", type: .bigint, .notNull)
            .column("sealed_private_key", type: .text, .notNull)
            .column("certificate", type: .text, .notNull)
            .column("created_at", type: .bigint, .notNull)
            .unique("root_kid", "created_day")
            .run()
    }
}
