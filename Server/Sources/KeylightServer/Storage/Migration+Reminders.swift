import SQLKit

extension Migration {
    /// Reminders before a license ends or its updates do (issue 49, part 7). Everything is new:
    /// two tables, two nullable columns and two indexes, so processes of the previous release keep
    /// inserting and reading licenses and mails as before (they never write the new columns).
    static let reminders = Migration(name: "0019_reminders") { db, capabilities in
        // Each tenant's thresholds (`30,7,1`, largest first) and whether buyers are mailed; a
        // tenant without a row has the defaults.
        try await db.create(table: "reminder_settings")
            .column("tenant_id", type: .text, .key, .references("tenants", "id"))
            .column("days_before", type: .text, .notNull)
            .column("mail_buyers", type: .boolean, .notNull)
            .column("updated_at", type: .bigint, .notNull)
            .run()
        // One row per license, kind (`expires`, `updates`) and threshold: claimed with the event and
        // the mail it sends, so each is sent once across processes and restarts. `due_at` is the
        // date it was about (a renewed license is reminded again for its new date); `sent` is false
        // for a threshold counted done because a nearer one was due at the first look.
        try await db.create(table: "license_reminders")
            .column("license_id", type: .text, .notNull)
            .column("kind", type: .text, .notNull)
            .column("threshold_days", type: .int, .notNull)
            .column("tenant_id", type: .text, .notNull)
            .column("due_at", type: .bigint, .notNull)
            .column("sent", type: .boolean, .notNull)
            .column("created_at", type: .bigint, .notNull)
            .primaryKey("license_id", "kind", "threshold_days")
            .run(clustered: capabilities)
        // Set when the buyer used a reminder's opt-out link: no more reminder mails for the license.
        try await db.addColumns(to: "licenses", [("reminders_unsubscribed_at", .bigint)])
        // A reminder mail's threshold (the date is the reminder row's).
        try await db.addColumns(to: "mail_outbox", [("days_before", .int)])
        // The sweep reads, per tenant, the licenses whose date falls within the largest threshold.
        try await db.create(index: "licenses_by_expiry").on("licenses").column("tenant_id").column("expires_at").run(where: "expires_at IS NOT NULL")
        try await db.create(index: "licenses_by_updates_until").on("licenses").column("tenant_id").column("updates_until").run(where: "updates_until IS NOT NULL")
    }
}
