import SQLKit

extension Migration {
    /// Insights (what runs the app, and how trials convert): each device's latest telemetry on
    /// its instance or keyless install; one row per device and day it was seen (`device_days`,
    /// pruned after the retention period); the daily roll-ups kept for good (`insights_daily`
    /// per dimension value, `insights_funnel_daily` per cohort day); and how far each product's
    /// roll-up has come (`insights_rollups`). No address or identifier beyond the random
    /// instance and install ids is stored.
    static let insights = Migration(name: "0016_insights") { db, capabilities in
        let telemetry: [(name: String, type: SQLDataType)] = InsightDimension.allCases.map { ($0.column, .text) }
        try await db.addColumns(to: "instances", telemetry)
        try await db.addColumns(to: "keyless_installs", telemetry + [
            ("trial_started_at", .bigint), ("converted_at", .bigint), ("converted_instance_id", .text),
        ])
        var days = db.create(table: "device_days")
            .column("tenant_id", type: .text, .notNull)
            .column("product_id", type: .text, .notNull)
            .column("day", type: .bigint, .notNull)
            // `licensed` (an instance id) or `keyless` (an install's own random id).
            .column("kind", type: .text, .notNull)
            .column("device_id", type: .text, .notNull)
        for dimension in InsightDimension.allCases { days = days.column(dimension.column, type: .text) }
        try await days.primaryKey("tenant_id", "product_id", "day", "kind", "device_id").run(clustered: capabilities)
        try await db.create(index: "device_days_by_day").on("device_days").column("day").run()
        try await db.create(table: "insights_daily")
            .column("tenant_id", type: .text, .notNull)
            .column("product_id", type: .text, .notNull)
            .column("day", type: .bigint, .notNull)
            // Devices seen in the `window_days` days ending with `day` (1, 7 or 30).
            .column("window_days", type: .int, .notNull)
            .column("dimension", type: .text, .notNull)
            .column("value", type: .text, .notNull)
            .column("kind", type: .text, .notNull)
            .column("devices", type: .bigint, .notNull)
            .primaryKey("tenant_id", "product_id", "window_days", "dimension", "day", "value", "kind")
            .run(clustered: capabilities)
        try await db.create(table: "insights_funnel_daily")
            .column("tenant_id", type: .text, .notNull)
            .column("product_id", type: .text, .notNull)
            // The cohort: the day the keyless installs were first seen.
            .column("day", type: .bigint, .notNull)
            .column("keyless_installs", type: .bigint, .notNull)
            .column("trials", type: .bigint, .notNull)
            .primaryKey("tenant_id", "product_id", "day")
            .run(clustered: capabilities)
        try await db.create(table: "insights_rollups")
            .column("tenant_id", type: .text, .notNull)
            .column("product_id", type: .text, .notNull)
            // The last day whose roll-up is final (days since 1970, UTC).
            .column("rolled_through", type: .bigint, .notNull)
            .primaryKey("tenant_id", "product_id")
            .run()
        // What was recorded before: each install's cohort, trials as their state says (expired is
        // a trial that ran out), and conversions dated by the install's last sighting (the
        // conversion's own time was not kept: a later check-in moves it later).
        try await db.raw("UPDATE keyless_installs SET trial_started_at = first_seen_at WHERE state IN ('trial', 'expired')").run()
        try await db.raw("UPDATE keyless_installs SET converted_at = last_seen_at WHERE converted_license_id IS NOT NULL").run()
        try await db.raw("""
            INSERT INTO insights_funnel_daily (tenant_id, product_id, day, keyless_installs, trials)
            SELECT tenant_id, product_id, first_seen_at / 86400, COUNT(*), SUM(CASE WHEN state IN ('trial', 'expired') THEN 1 ELSE 0 END)
            FROM keyless_installs GROUP BY tenant_id, product_id, first_seen_at / 86400
            """).run()
    }
}
