extension Migration {
    /// Outbound webhooks (endpoints and their delivery outbox) and Stripe Checkout (each key
    /// type's Stripe price, each tenant's checkout API key).
    static let webhooksAndCheckout = Migration(name: "0004_webhooks_and_checkout") { c in
        [
            """
            CREATE TABLE webhook_endpoints (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id),
                url TEXT NOT NULL,
                sealed_secret TEXT NOT NULL,
                events TEXT NOT NULL,
                enabled BOOLEAN NOT NULL,
                disabled_reason TEXT,
                created_at \(c.bigint) NOT NULL,
                updated_at \(c.bigint) NOT NULL
            )
            """,
            "CREATE INDEX webhook_endpoints_by_tenant ON webhook_endpoints (tenant_id, enabled)",
            // One row per event per endpoint. The payload is sealed (license.created carries the
            // raw license key) and dropped once the delivery ends.
            """
            CREATE TABLE webhook_deliveries (
                id TEXT PRIMARY KEY,
                endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id),
                tenant_id TEXT NOT NULL,
                event_id TEXT NOT NULL,
                event_type TEXT NOT NULL,
                sealed_payload TEXT,
                status TEXT NOT NULL,
                attempts INTEGER NOT NULL,
                next_attempt_at \(c.bigint) NOT NULL,
                locked_until \(c.bigint) NOT NULL,
                last_attempt_at \(c.bigint),
                last_status_code INTEGER,
                last_error TEXT,
                created_at \(c.bigint) NOT NULL,
                finished_at \(c.bigint)
            )
            """,
            "CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at)",
            "CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, created_at)",
            "ALTER TABLE key_types ADD COLUMN stripe_price_id TEXT",
            "ALTER TABLE key_types ADD COLUMN stripe_mode TEXT",
            """
            CREATE TABLE checkout_keys (
                tenant_id TEXT PRIMARY KEY REFERENCES tenants (id),
                key_hash TEXT NOT NULL,
                created_at \(c.bigint) NOT NULL
            )
            """,
        ]
    }
}
