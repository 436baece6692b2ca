import SQLKit

extension Migration {
    /// App Store purchases as licenses: each product's App Store app (bundle id, environments
    /// accepted), the StoreKit product each key type is, and the license each purchase
    /// (`originalTransactionId`) became, minted once.
    static let appStore = Migration(name: "0015_appstore") { db, _ in
        try await db.addColumns(to: "products", [("appstore_bundle_id", .text), ("appstore_environments", .text)])
        try await db.addColumns(to: "key_types", [("appstore_product_id", .text)])
        try await db.create(index: "key_types_by_appstore_product").unique().on("key_types").column("tenant_id").column("product_id").column("appstore_product_id").run()
        try await db.create(table: "appstore_purchases")
            .column("tenant_id", type: .text, .notNull)
            .column("original_transaction_id", type: .text, .notNull)
            .column("product_id", type: .text, .notNull)
            .column("license_id", type: .text, .notNull)
            .column("environment", type: .text, .notNull)
            .column("created_at", type: .bigint, .notNull)
            .primaryKey("tenant_id", "original_transaction_id")
            .run()
    }
}
