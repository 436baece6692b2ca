import SQLKit

extension Migration {
    /// Stripe events deduplicated per (tenant, event id), with the sealed event kept while it
    /// can be retried; each subscription's paid-through and end times, so events apply in any
    /// order; Checkout Sessions and the key a buyer may collect once; the throttle of the
    /// activation-limit webhook; and an index of webhook deliveries in flight per endpoint.
    static let moneyPaths = Migration(name: "0008_money_paths") { db, _ in
        try await db.create(table: "stripe_events_by_tenant")
            .column("tenant_id", type: .text, .notNull)
            .column("id", type: .text, .notNull)
            .column("type", type: .text, .notNull)
            .column("outcome", type: .text, .notNull)
            .column("event_created", type: .bigint)
            .column("attempts", type: .int, .notNull)
            .column("sealed_event", type: .text)
            .column("received_at", type: .bigint, .notNull)
            .column("updated_at", type: .bigint, .notNull)
            .primaryKey("tenant_id", "id")
            .run()
        // Moving rows, not schema: plain SQL says it most clearly.
        try await db.raw("""
            INSERT INTO stripe_events_by_tenant (tenant_id, id, type, outcome, event_created, attempts, sealed_event, received_at, updated_at)
            SELECT tenant_id, id, type, outcome, NULL, 1, NULL, received_at, received_at FROM stripe_events
            """).run()
        try await db.drop(table: "stripe_events").run()
        try await db.alter(table: "stripe_events_by_tenant").rename(to: "stripe_events").run()
        try await db.create(index: "stripe_events_by_outcome").on("stripe_events").column("tenant_id").column("outcome").column("received_at").run()
        // What Stripe has said about each subscription, whatever order it said it in.
        try await db.create(table: "stripe_subscriptions")
            .column("tenant_id", type: .text, .notNull)
            .column("id", type: .text, .notNull)
            .column("paid_through", type: .bigint)
            .column("ended_at", type: .bigint)
            .column("updated_at", type: .bigint, .notNull)
            .primaryKey("tenant_id", "id")
            .run()
        // A session's license is minted at most once; its key is kept sealed for 24 hours
        // so the buyer's success page can show it once.
        try await db.create(table: "checkout_sessions")
            .column("tenant_id", type: .text, .notNull)
            .column("id", type: .text, .notNull)
            .column("success_origin", type: .text)
            .column("payment_status", type: .text)
            .column("license_id", type: .text)
            .column("sealed_license_key", type: .text)
            .column("minted_at", type: .bigint)
            .column("claimed_at", type: .bigint)
            .column("created_at", type: .bigint, .notNull)
            .primaryKey("tenant_id", "id")
            .run()
        try await db.addColumns(to: "licenses", [("activation_limit_notified_at", .bigint)])
        try await db.create(index: "webhook_deliveries_in_flight").on("webhook_deliveries").column("endpoint_id").column("locked_until")
            .run(where: "status = 'pending'")
    }
}
