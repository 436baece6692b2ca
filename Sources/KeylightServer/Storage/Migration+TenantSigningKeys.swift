extension Migration {
    /// Protocol 6.2: signing keys per tenant. Every existing tenant gets the server's keys as they
    /// were (same kid, same sealed private key, same status), so apps already shipped keep
    /// verifying; from here on each tenant's rotations are its own. The server-wide table stays,
    /// unread, for the record.
    static let tenantSigningKeys = Migration(name: "0006_tenant_signing_keys") { c in
        [
            """
            CREATE TABLE tenant_signing_keys (
                tenant_id TEXT NOT NULL REFERENCES tenants (id),
                kid TEXT NOT NULL,
                public_key TEXT NOT NULL,
                sealed_private_key TEXT NOT NULL,
                status TEXT NOT NULL,
                created_at \(c.bigint) NOT NULL,
                status_changed_at \(c.bigint) NOT NULL,
                PRIMARY KEY (tenant_id, kid)
            )
            """,
            // One key signs per tenant, and one waits to: even when several processes act at once.
            "CREATE UNIQUE INDEX tenant_signing_keys_one_active ON tenant_signing_keys (tenant_id) WHERE status = 'active'",
            "CREATE UNIQUE INDEX tenant_signing_keys_one_next ON tenant_signing_keys (tenant_id) WHERE status = 'next'",
            """
            INSERT INTO tenant_signing_keys (tenant_id, kid, public_key, sealed_private_key, status, created_at, status_changed_at)
            SELECT t.id, k.kid, k.public_key, k.sealed_private_key, k.status, k.created_at, k.status_changed_at
            FROM tenants t CROSS JOIN signing_keys k
            """,
        ]
    }
}
