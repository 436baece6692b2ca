import SQLKit

extension Migration {
    /// The dashboard: its users, their sessions (shared by every process), and per-day usage
    /// counts for its charts.
    static let dashboard = Migration(name: "0005_dashboard") { db, c in
        try await db.create(table: "dashboard_users")
            .column("id", type: .text, .key)
            .column("email", type: .text, .notNull, .unique)
            .column("password_hash", type: .text, .notNull)
            .column("failed_logins", type: .int, .notNull)
            .column("locked_until", type: .bigint, .notNull)
            .column("created_at", type: .bigint, .notNull)
            .column("last_login_at", type: .bigint)
            .run()
        try await db.create(table: "dashboard_sessions")
            .column("id", type: .text, .key)
            .column("value", type: .text, .notNull)
            .column("expires_at", type: .bigint)
            .run()
        try await db.create(index: "dashboard_sessions_by_expiry").on("dashboard_sessions").column("expires_at").run()
        try await db.create(table: "usage_daily")
            .column("tenant_id", type: .text, .notNull)
            .column("product_id", type: .text, .notNull)
            .column("day", type: .bigint, .notNull)
            .column("activations", type: .bigint, .notNull)
            .column("validations", type: .bigint, .notNull)
            .primaryKey("tenant_id", "product_id", "day")
            .run(clustered: c)
    }
}
