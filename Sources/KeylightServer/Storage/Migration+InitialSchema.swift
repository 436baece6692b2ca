extension Migration {
    /// Tenants, products, key types, licenses, instances, signing keys, audit log, keyless
    /// installs, Stripe settings and server settings. Times are Unix seconds.
    static let initialSchema = Migration(name: "0001_initial_schema") { c in
        [
            """
            CREATE TABLE tenants (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                created_at \(c.bigint) NOT NULL
            )
            """,
            """
            CREATE TABLE products (
                tenant_id TEXT NOT NULL REFERENCES tenants (id),
                id TEXT NOT NULL,
                name TEXT NOT NULL,
                key_prefix TEXT NOT NULL,
                sdk_key_hash TEXT NOT NULL,
                trial_duration_days INTEGER NOT NULL,
                free_tier_enabled BOOLEAN NOT NULL,
                created_at \(c.bigint) NOT NULL,
                updated_at \(c.bigint) NOT NULL,
                PRIMARY KEY (tenant_id, id)
            )
            """,
            """
            CREATE TABLE key_types (
                tenant_id TEXT NOT NULL,
                product_id TEXT NOT NULL,
                id TEXT NOT NULL,
                display_name TEXT NOT NULL,
                activation_limit INTEGER NOT NULL,
                duration_days INTEGER,
                fallback_access BOOLEAN NOT NULL,
                lease_ttl_seconds \(c.bigint) NOT NULL,
                entitlements TEXT NOT NULL,
                created_at \(c.bigint) NOT NULL,
                PRIMARY KEY (tenant_id, product_id, id),
                FOREIGN KEY (tenant_id, product_id) REFERENCES products (tenant_id, id)
            )
            """,
            // active_instances mirrors COUNT(active instances) and is only ever changed by a
            // conditional UPDATE, which is what makes the activation cap atomic. Stored in key-hash
            // order: every SDK request looks a license up by its key hash.
            """
            CREATE TABLE licenses (
                key_hash TEXT PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                tenant_id TEXT NOT NULL,
                product_id TEXT NOT NULL,
                key_type_id TEXT NOT NULL,
                masked_key TEXT NOT NULL,
                status TEXT NOT NULL,
                expires_at \(c.bigint),
                customer_email TEXT,
                active_instances INTEGER NOT NULL,
                created_at \(c.bigint) NOT NULL,
                updated_at \(c.bigint) NOT NULL,
                FOREIGN KEY (tenant_id, product_id, key_type_id) REFERENCES key_types (tenant_id, product_id, id)
            )\(c.clusteredTable)
            """,
            "CREATE INDEX licenses_by_product ON licenses (tenant_id, product_id, id)",
            "CREATE INDEX licenses_by_email ON licenses (tenant_id, product_id, customer_email)",
            """
            CREATE TABLE instances (
                id TEXT PRIMARY KEY,
                license_id TEXT NOT NULL REFERENCES licenses (id),
                name TEXT NOT NULL,
                machine_hash TEXT,
                active BOOLEAN NOT NULL,
                activated_at \(c.bigint) NOT NULL,
                last_validated_at \(c.bigint),
                deactivated_at \(c.bigint)
            )\(c.clusteredTable)
            """,
            "CREATE INDEX instances_by_license ON instances (license_id)",
            // One active instance per machine and license: concurrent re-activations of one
            // machine cannot take two slots.
            "CREATE UNIQUE INDEX instances_active_machine ON instances (license_id, machine_hash) WHERE active AND machine_hash IS NOT NULL",
            """
            CREATE TABLE signing_keys (
                kid TEXT PRIMARY KEY,
                public_key TEXT NOT NULL,
                sealed_private_key TEXT NOT NULL,
                status TEXT NOT NULL,
                created_at \(c.bigint) NOT NULL,
                status_changed_at \(c.bigint) NOT NULL
            )
            """,
            // At most one active key, even when several processes start at once.
            "CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (status) WHERE status = 'active'",
            """
            CREATE TABLE audit_log (
                id \(c.autoIncrementPrimaryKey),
                at \(c.bigint) NOT NULL,
                actor TEXT NOT NULL,
                action TEXT NOT NULL,
                tenant_id TEXT,
                target TEXT,
                details TEXT NOT NULL
            )
            """,
            "CREATE INDEX audit_log_by_tenant ON audit_log (tenant_id, id)",
            """
            CREATE TABLE keyless_installs (
                tenant_id TEXT NOT NULL,
                product_id TEXT NOT NULL,
                instance_id TEXT NOT NULL,
                state TEXT NOT NULL,
                machine_hash TEXT,
                first_seen_at \(c.bigint) NOT NULL,
                last_seen_at \(c.bigint) NOT NULL,
                converted_license_id TEXT,
                PRIMARY KEY (tenant_id, product_id, instance_id)
            )
            """,
            """
            CREATE TABLE stripe_settings (
                tenant_id TEXT PRIMARY KEY REFERENCES tenants (id),
                sealed_webhook_secret TEXT NOT NULL,
                sealed_secret_key TEXT,
                updated_at \(c.bigint) NOT NULL
            )
            """,
            """
            CREATE TABLE settings (
                name TEXT PRIMARY KEY,
                value TEXT NOT NULL
            )
            """,
        ]
    }
}
