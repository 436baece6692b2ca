import SQLKit

extension Migration {
    /// Merchants of record (Paddle Billing, Lemon Squeezy, Polar):
    /// - each tenant's settings per provider, secrets sealed under the master key;
    /// - which price, variant or product each key type sells as (one key type per id in a tenant);
    /// - received events, deduplicated per (tenant, provider, delivery id), kept sealed while they
    ///   can be applied again;
    /// - orders, claimed once so a purchase mints once however it is delivered, and remembered
    ///   when a refund comes first;
    /// - what each subscription has paid for and when it ended, whatever order that was told in;
    /// - Paddle customers whose address is still to be learnt (events name a customer, not an address);
    /// - on licenses, where a paid license came from (`payment_source`, `payment_order_id`), for
    ///   every provider including Stripe.
    static let merchants = Migration(name: "0014_merchants") { db, _ in
        try await db.create(table: "merchant_settings")
            .column("tenant_id", type: .text, .notNull, .references("tenants", "id"))
            .column("provider", type: .text, .notNull)
            .column("sealed_webhook_secret", type: .text, .notNull)
            .column("sealed_api_key", type: .text)
            .column("environment", type: .text)
            .column("accept_test_mode", type: .boolean, .notNull, .default(SQLLiteral.boolean(false)))
            .column("updated_at", type: .bigint, .notNull)
            .primaryKey("tenant_id", "provider")
            .run()
        try await db.addColumns(to: "key_types", [("paddle_price_id", .text), ("lemonsqueezy_variant_id", .text), ("polar_product_id", .text)])
        for column in ["paddle_price_id", "lemonsqueezy_variant_id", "polar_product_id"] {
            try await db.create(index: "key_types_by_\(column)").unique().on("key_types").column("tenant_id").column(column).run()
        }
        try await db.create(table: "merchant_events")
            .column("tenant_id", type: .text, .notNull)
            .column("provider", type: .text, .notNull)
            .column("id", type: .text, .notNull)
            .column("type", type: .text, .notNull)
            .column("outcome", type: .text, .notNull)
            .column("occurred_at", type: .bigint)
            .column("attempts", type: .int, .notNull)
            .column("sealed_event", type: .text)
            .column("received_at", type: .bigint, .notNull)
            .column("updated_at", type: .bigint, .notNull)
            .primaryKey("tenant_id", "provider", "id")
            .run()
        try await db.create(index: "merchant_events_by_outcome").on("merchant_events").column("tenant_id").column("provider").column("outcome").column("received_at").run()
        try await db.create(table: "merchant_orders")
            .column("tenant_id", type: .text, .notNull)
            .column("provider", type: .text, .notNull)
            .column("id", type: .text, .notNull)
            .column("status", type: .text, .notNull)
            .column("licenses", type: .int, .notNull)
            .column("subscription_id", type: .text)
            .column("created_at", type: .bigint, .notNull)
            .column("updated_at", type: .bigint, .notNull)
            .primaryKey("tenant_id", "provider", "id")
            .run()
        try await db.create(table: "merchant_subscriptions")
            .column("tenant_id", type: .text, .notNull)
            .column("provider", type: .text, .notNull)
            .column("id", type: .text, .notNull)
            .column("paid_through", type: .bigint)
            .column("ended_at", type: .bigint)
            .column("updated_at", type: .bigint, .notNull)
            .primaryKey("tenant_id", "provider", "id")
            .run()
        try await db.create(table: "merchant_customers")
            .column("tenant_id", type: .text, .notNull)
            .column("provider", type: .text, .notNull)
            .column("id", type: .text, .notNull)
            .column("email", type: .text)
            .column("status", type: .text, .notNull)
            .column("attempts", type: .int, .notNull)
            .column("next_attempt_at", type: .bigint, .notNull)
            .column("locked_until", type: .bigint, .notNull)
            .column("last_error", type: .text)
            .column("created_at", type: .bigint, .notNull)
            .column("updated_at", type: .bigint, .notNull)
            .primaryKey("tenant_id", "provider", "id")
            .run()
        try await db.create(index: "merchant_customers_due").on("merchant_customers").column("provider").column("status").column("next_attempt_at").run()
        try await db.addColumns(to: "licenses", [
            ("payment_source", .text), ("payment_order_id", .text), ("payment_subscription_id", .text), ("payment_customer_id", .text),
        ])
        try await db.create(index: "licenses_by_payment_order").on("licenses").column("tenant_id").column("payment_source").column("payment_order_id").run()
        try await db.create(index: "licenses_by_payment_subscription").on("licenses").column("tenant_id").column("payment_source").column("payment_subscription_id").run()
        // Stripe's licenses name their source too: the Checkout Session that bought them.
        try await db.raw("""
            UPDATE licenses SET payment_source = 'stripe',
                payment_order_id = (SELECT checkout_sessions.id FROM checkout_sessions
                                    WHERE checkout_sessions.tenant_id = licenses.tenant_id AND checkout_sessions.license_id = licenses.id)
            WHERE stripe_payment_intent_id IS NOT NULL OR stripe_subscription_id IS NOT NULL
               OR EXISTS (SELECT 1 FROM checkout_sessions WHERE checkout_sessions.tenant_id = licenses.tenant_id AND checkout_sessions.license_id = licenses.id)
            """).run()
    }
}
