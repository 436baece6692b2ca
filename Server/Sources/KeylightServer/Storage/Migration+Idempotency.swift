import SQLKit

extension Migration {
    /// Admin POSTs sent with an `Idempotency-Key`: one row per (token, key), holding the request's
    /// fingerprint and, once answered, the answer sealed under the master key (a mint's answer
    /// carries the license key). Rows expire after 24 hours and are swept.
    static let idempotency = Migration(name: "0012_idempotency") { db, _ in
        try await db.create(table: "idempotency_keys")
            .column("scope", type: .text, .notNull)
            .column("idem_key", type: .text, .notNull)
            .column("fingerprint", type: .text, .notNull)
            .column("state", type: .text, .notNull)
            .column("owner", type: .text)
            .column("sealed_answer", type: .text)
            .column("locked_until", type: .bigint, .notNull)
            .column("created_at", type: .bigint, .notNull)
            .column("expires_at", type: .bigint, .notNull)
            .primaryKey("scope", "idem_key")
            .run()
        try await db.create(index: "idempotency_keys_expiry").on("idempotency_keys").column("expires_at").run()
    }
}
