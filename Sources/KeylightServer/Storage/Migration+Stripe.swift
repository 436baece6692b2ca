extension Migration {
    /// Stripe: processed event ids (each event is applied at most once) and, on licenses, the
    /// Stripe objects that bought them, so refunds and subscription events find their license.
    static let stripe = Migration(name: "0003_stripe") { c in
        [
            """
            CREATE TABLE stripe_events (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL,
                type TEXT NOT NULL,
                outcome TEXT NOT NULL,
                received_at \(c.bigint) NOT NULL
            )
            """,
            "ALTER TABLE licenses ADD COLUMN stripe_customer_id TEXT",
            "ALTER TABLE licenses ADD COLUMN stripe_payment_intent_id TEXT",
            "ALTER TABLE licenses ADD COLUMN stripe_subscription_id TEXT",
            "CREATE INDEX licenses_by_payment_intent ON licenses (tenant_id, stripe_payment_intent_id)",
            "CREATE INDEX licenses_by_subscription ON licenses (tenant_id, stripe_subscription_id)",
        ]
    }
}
