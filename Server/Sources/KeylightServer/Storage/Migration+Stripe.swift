import SQLKit

extension Migration {
    /// Stripe: processed event ids (each event is applied at most once) and, on licenses, the
    /// Stripe objects that bought them, so refunds and subscription events find their license.
    static let stripe = Migration(name: "0003_stripe") { db, _ in
        try await db.create(table: "stripe_events")
            .column("id", type: .text, .key)
            .column("tenant_id", type: .text, .notNull)
            .column("type", type: .text, .notNull)
            .column("outcome", type: .text, .notNull)
            .column("received_at", type: .bigint, .notNull)
            .run()
        try await db.addColumns(to: "licenses", [("stripe_customer_id", .text), ("stripe_payment_intent_id", .text), ("stripe_subscription_id", .text)])
        try await db.create(index: "licenses_by_payment_intent").on("licenses").column("tenant_id").column("stripe_payment_intent_id").run()
        try await db.create(index: "licenses_by_subscription").on("licenses").column("tenant_id").column("stripe_subscription_id").run()
    }
}
