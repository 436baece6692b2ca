import SQLKit

extension Migration {
    /// Protocol 6.2: signing keys per tenant. Every existing tenant gets the server's keys as they
    /// were (same kid, same sealed private key, same status), so apps already shipped keep
    /// verifying; from here on each tenant's rotations are its own. The server-wide table stays,
    /// unread, for the record.
    static let tenantSigningKeys = Migration(name: "0006_tenant_signing_keys") { db, _ in
        try await db.create(table: "tenant_signing_keys")
            .column("tenant_id", type: .text, .notNull, .references("tenants", "id"))
            .column("kid", type: .text, .notNull)
            .column("public_key", type: .text, .notNull)
            .column("sealed_private_key", type: .text, .notNull)
            .column("status", type: .text, .notNull)
            .column("created_at", type: .bigint, .notNull)
            .column("status_changed_at", type: .bigint, .notNull)
            .primaryKey("tenant_id", "kid")
            .run()
        // One key signs per tenant, and one waits to: even when several processes act at once.
        try await db.create(index: "tenant_signing_keys_one_active").unique().on("tenant_signing_keys").column("tenant_id").run(where: "status = 'active'")
        try await db.create(index: "tenant_signing_keys_one_next").unique().on("tenant_signing_keys").column("tenant_id").run(where: "status = 'next'")
        // Moving rows, not schema: plain SQL says it most clearly.
        try await db.raw("""
            INSERT INTO tenant_signing_keys (tenant_id, kid, public_key, sealed_private_key, status, created_at, status_changed_at)
            SELECT t.id, k.kid, k.public_key, k.sealed_private_key, k.status, k.created_at, k.status_changed_at
            FROM tenants t CROSS JOIN signing_keys k
            """).run()
    }
}
