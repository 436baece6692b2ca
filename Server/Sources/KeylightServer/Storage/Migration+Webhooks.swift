import SQLKit

extension Migration {
    /// Outbound webhooks (endpoints and their delivery outbox) and Stripe Checkout (each key
    /// type's Stripe price, each tenant's checkout API key).
    static let webhooksAndCheckout = Migration(name: "0004_webhooks_and_checkout") { db, _ in
        try await db.create(table: "webhook_endpoints")
            .column("id", type: .text, .key)
            .column("tenant_id", type: .text, .notNull, .references("tenants", "id"))
            .column("url", type: .text, .notNull)
            .column("sealed_secret", type: .text, .notNull)
            .column("events", type: .text, .notNull)
            .column("enabled", type: .boolean, .notNull)
            .column("disabled_reason", type: .text)
            .column("created_at", type: .bigint, .notNull)
            .column("updated_at", type: .bigint, .notNull)
            .run()
        try await db.create(index: "webhook_endpoints_by_tenant").on("webhook_endpoints").column("tenant_id").column("enabled").run()
        // One row per event per endpoint. The payload is sealed (license.created carries the
        // raw license key) and dropped once the delivery ends.
        try await db.create(table: "webhook_deliveries")
            .column("id", type: .text, .key)
            .column("endpoint_id", type: .text, .notNull, .references("webhook_endpoints", "id"))
            .column("tenant_id", type: .text, .notNull)
            .column("event_id", type: .text, .notNull)
            .column("event_type", type: .text, .notNull)
            .column("sealed_payload", type: .text)
            .column("status", type: .text, .notNull)
            .column("attempts", type: .int, .notNull)
            .column("next_attempt_at", type: .bigint, .notNull)
            .column("locked_until", type: .bigint, .notNull)
            .column("last_attempt_at", type: .bigint)
            .column("last_status_code", type: .int)
            .column("last_error", type: .text)
            .column("created_at", type: .bigint, .notNull)
            .column("finished_at", type: .bigint)
            .run()
        try await db.create(index: "webhook_deliveries_due").on("webhook_deliveries").column("status").column("next_attempt_at").run()
        try await db.create(index: "webhook_deliveries_by_endpoint").on("webhook_deliveries").column("endpoint_id").column("created_at").run()
        try await db.addColumns(to: "key_types", [("stripe_price_id", .text), ("stripe_mode", .text)])
        try await db.create(table: "checkout_keys")
            .column("tenant_id", type: .text, .key, .references("tenants", "id"))
            .column("key_hash", type: .text, .notNull)
            .column("created_at", type: .bigint, .notNull)
            .run()
    }
}
