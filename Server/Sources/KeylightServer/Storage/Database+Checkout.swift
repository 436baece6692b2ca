import SQLKit

extension Database {
    /// Replaces the tenant's checkout API key (stored as its SHA-256); the old key stops working.
    func setCheckoutKey(tenantId: String, keyHash: String, now: Int64, actor: AuditActor) async throws {
        try await write { db in
            try await db.raw("""
                INSERT INTO checkout_keys (tenant_id, key_hash, created_at) VALUES (\(bind: tenantId), \(bind: keyHash), \(bind: now))
                ON CONFLICT (tenant_id) DO UPDATE SET key_hash = excluded.key_hash, created_at = excluded.created_at
                """).run()
            try await Self.audit(db, at: now, actor: actor, action: "checkout_key.rotate", tenantId: tenantId, target: tenantId)
        }
    }

    func checkoutKeyHash(tenantId: String) async throws -> String? {
        try await sql.raw("SELECT key_hash FROM checkout_keys WHERE tenant_id = \(bind: tenantId)").first(decodingColumn: "key_hash", as: String.self)
    }
}
