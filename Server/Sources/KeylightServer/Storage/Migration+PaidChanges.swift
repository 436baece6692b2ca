import SQLKit

extension Migration {
    /// Paid changes to licenses already sold (issue 49): what each key type offers its licenses
    /// (upgrades to other key types, a renewal, extra seats) at which price of which provider;
    /// whether an upgrade to a key type restarts its updates window; and each paid change applied,
    /// once per order, with what it changed so a refund can undo it.
    static let paidChanges = Migration(name: "0018_paid_changes") { db, _ in
        try await db.create(table: "key_type_offers")
            .column("tenant_id", type: .text, .notNull)
            .column("product_id", type: .text, .notNull)
            .column("key_type_id", type: .text, .notNull)
            // `upgrade`, `renewal` or `seats`.
            .column("kind", type: .text, .notNull)
            // The key type an upgrade moves to; empty for a renewal or seats.
            .column("target_key_type_id", type: .text, .notNull)
            .column("provider", type: .text, .notNull)
            // The provider's price, variant or product id.
            .column("price_ref", type: .text, .notNull)
            .column("price_label", type: .text)
            .column("created_at", type: .bigint, .notNull)
            .primaryKey("tenant_id", "product_id", "key_type_id", "kind", "target_key_type_id", "provider")
            .run()
        try await db.create(index: "key_type_offers_by_price").unique().on("key_type_offers").column("tenant_id").column("provider").column("price_ref").run()
        try await db.addColumns(to: "key_types", [("upgrade_restarts_updates", .boolean)])
        try await db.create(table: "license_paid_changes")
            .column("tenant_id", type: .text, .notNull)
            .column("provider", type: .text, .notNull)
            .column("order_id", type: .text, .notNull)
            .column("license_id", type: .text, .notNull)
            .column("kind", type: .text, .notNull)
            .column("quantity", type: .int, .notNull)
            // Stripe's payment intent, which its refunds name.
            .column("payment_ref", type: .text)
            // `{field: [from, to]}` as applied; a refund sets back each field still at `to`.
            .column("changes", type: .text, .notNull)
            // `applied`, or `refunded` (also when the refund came first: the payment then changes nothing).
            .column("status", type: .text, .notNull)
            .column("created_at", type: .bigint, .notNull)
            .column("updated_at", type: .bigint, .notNull)
            .primaryKey("tenant_id", "provider", "order_id")
            .run()
        try await db.create(index: "license_paid_changes_by_payment").on("license_paid_changes").column("tenant_id").column("provider").column("payment_ref").run()
        try await db.create(index: "license_paid_changes_by_license").on("license_paid_changes").column("license_id").run()
    }
}
