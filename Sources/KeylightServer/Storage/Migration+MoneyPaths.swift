extension Migration {
    /// Stripe events deduplicated per (tenant, event id), with the sealed event kept while it
    /// can be retried; each subscription's paid-through and end times, so events apply in any
    /// order; Checkout Sessions and the key a buyer may collect once; the throttle of the
    /// activation-limit webhook; and an index of webhook deliveries in flight per endpoint.
    static let moneyPaths = Migration(name: "0008_money_paths") { c in
        [
            """
            CREATE TABLE stripe_events_by_tenant (
                tenant_id TEXT NOT NULL,
                id TEXT NOT NULL,
                type TEXT NOT NULL,
                outcome TEXT NOT NULL,
                event_created \(c.bigint),
                attempts INTEGER NOT NULL,
                sealed_event TEXT,
                received_at \(c.bigint) NOT NULL,
                updated_at \(c.bigint) NOT NULL,
                PRIMARY KEY (tenant_id, id)
            )
            """,
            """
            INSERT INTO stripe_events_by_tenant (tenant_id, id, type, outcome, event_created, attempts, sealed_event, received_at, updated_at)
            SELECT tenant_id, id, type, outcome, NULL, 1, NULL, received_at, received_at FROM stripe_events
            """,
            "DROP TABLE stripe_events",
            "ALTER TABLE stripe_events_by_tenant RENAME TO stripe_events",
            "CREATE INDEX stripe_events_by_outcome ON stripe_events (tenant_id, outcome, received_at)",
            // What Stripe has said about each subscription, whatever order it said it in.
            """
            CREATE TABLE stripe_subscriptions (
                tenant_id TEXT NOT NULL,
                id TEXT NOT NULL,
                paid_through \(c.bigint),
                ended_at \(c.bigint),
                updated_at \(c.bigint) NOT NULL,
                PRIMARY KEY (tenant_id, id)
            )
            """,
            // A session's license is minted at most once; its key is kept sealed for 24 hours
            // so the buyer's success page can show it once.
            """
            CREATE TABLE checkout_sessions (
                tenant_id TEXT NOT NULL,
                id TEXT NOT NULL,
                success_origin TEXT,
                payment_status TEXT,
                license_id TEXT,
                sealed_license_key TEXT,
                minted_at \(c.bigint),
                claimed_at \(c.bigint),
                created_at \(c.bigint) NOT NULL,
                PRIMARY KEY (tenant_id, id)
            )
            """,
            "ALTER TABLE licenses ADD COLUMN activation_limit_notified_at \(c.bigint)",
            "CREATE INDEX webhook_deliveries_in_flight ON webhook_deliveries (endpoint_id, locked_until) WHERE status = 'pending'",
        ]
    }
}
