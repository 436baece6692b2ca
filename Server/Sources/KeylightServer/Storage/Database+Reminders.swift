import SQLKit

/// What opting out of a license's reminder mails found.
enum ReminderOptOut: Sendable {
    case unsubscribed(License)
    /// It was already off: nothing changed (the link is idempotent).
    case alreadyUnsubscribed(License)
    case notFound
}

extension Database {
    // MARK: Settings

    /// The tenant's reminder settings (nil: the defaults).
    func reminderSettings(tenantId: String) async throws -> ReminderSettings? {
        guard let row = try await sql.raw("""
            SELECT days_before, mail_buyers, subject_template, text_template, html_template FROM reminder_settings WHERE tenant_id = \(bind: tenantId)
            """).first() else { return nil }
        var settings = ReminderSettings(storedDays: try row.decode(column: "days_before", as: String.self), mailBuyers: try row.decode(column: "mail_buyers", as: Bool.self))
        settings.subjectTemplate = try row.decode(column: "subject_template", as: String?.self)
        settings.textTemplate = try row.decode(column: "text_template", as: String?.self)
        settings.htmlTemplate = try row.decode(column: "html_template", as: String?.self)
        return settings
    }

    /// Replaces the tenant's reminder settings, audited.
    func putReminderSettings(_ settings: ReminderSettings, tenantId: String, now: Int64, actor: AuditActor) async throws {
        try await write { db in
            try await db.raw("""
                INSERT INTO reminder_settings (tenant_id, days_before, mail_buyers, subject_template, text_template, html_template, updated_at)
                VALUES (\(bind: tenantId), \(bind: settings.storedDays), \(bind: settings.mailBuyers), \(bind: settings.subjectTemplate),
                        \(bind: settings.textTemplate), \(bind: settings.htmlTemplate), \(bind: now))
                ON CONFLICT (tenant_id) DO UPDATE SET days_before = excluded.days_before, mail_buyers = excluded.mail_buyers,
                    subject_template = excluded.subject_template, text_template = excluded.text_template, html_template = excluded.html_template,
                    updated_at = excluded.updated_at
                """).run()
            try await Self.audit(db, at: now, actor: actor, action: "reminder_settings.update", tenantId: tenantId, target: tenantId, details: [
                "days_before": settings.storedDays, "mail_buyers": String(settings.mailBuyers),
                "templates": [settings.subjectTemplate, settings.textTemplate, settings.htmlTemplate].contains { $0 != nil } ? "the tenant's" : "the server's",
            ])
        }
    }

    /// Every tenant with its reminder settings and the reminder events its webhook endpoints take:
    /// what the sweep works through (one statement, however many tenants).
    func reminderPlans() async throws -> [ReminderPlan] {
        let expiring = WebhookOutbox.subscribed(to: ReminderKind.expires.eventType, tenant: "t.id")
        let updates = WebhookOutbox.subscribed(to: ReminderKind.updates.eventType, tenant: "t.id")
        return try await sql.raw("""
            SELECT t.id AS tenant_id, s.days_before, s.mail_buyers, \(expiring) AS takes_expires, \(updates) AS takes_updates
            FROM tenants t LEFT JOIN reminder_settings s ON s.tenant_id = t.id
            ORDER BY t.id
            """).all().map { row in
            let days = try row.decode(column: "days_before", as: String?.self)
            let mailBuyers = try row.decode(column: "mail_buyers", as: Bool?.self) ?? false
            let settings = days.map { ReminderSettings(storedDays: $0, mailBuyers: mailBuyers) } ?? ReminderSettings()
            var subscribed: Set<ReminderKind> = []
            if try row.decode(column: "takes_expires", as: Bool.self) { subscribed.insert(.expires) }
            if try row.decode(column: "takes_updates", as: Bool.self) { subscribed.insert(.updates) }
            return ReminderPlan(tenantId: try row.decode(column: "tenant_id", as: String.self), settings: settings, subscribed: subscribed)
        }
    }

    // MARK: The sweep

    /// Up to `limit` of the tenant's active licenses with a reminder of `kind` due now and not yet
    /// sent for their current date, soonest date first. The date's index (`licenses_by_expiry`,
    /// `licenses_by_updates_until`) bounds the read to the licenses whose date falls within the
    /// largest threshold; each is checked against `license_reminders` by its primary key, for the
    /// threshold ``ReminderSchedule/due(date:now:)`` picks (here as a `CASE`, smallest first).
    func licensesDueReminders(tenantId: String, kind: ReminderKind, schedule: ReminderSchedule, now: Int64, limit: Int) async throws -> [String] {
        let date = SQLQueryString("l." + kind.column)
        var nearest: SQLQueryString = "CASE"
        for days in schedule.daysBefore.reversed() {
            nearest += " WHEN \(date) <= \(bind: now + Int64(days) * 86_400) THEN \(literal: days)"
        }
        nearest += " END"
        var query: SQLQueryString = """
            SELECT l.id FROM licenses l
            WHERE l.tenant_id = \(bind: tenantId) AND \(date) IS NOT NULL AND \(date) > \(bind: now) AND \(date) <= \(bind: now + schedule.window)
              AND l.status = 'active'
            """
        // Updates of a license that has ended are nobody's concern.
        if kind == .updates { query += " AND (l.expires_at IS NULL OR l.expires_at > \(bind: now))" }
        query += """
             AND NOT EXISTS (
                SELECT 1 FROM license_reminders r
                WHERE r.license_id = l.id AND r.kind = \(bind: kind.rawValue) AND r.threshold_days = \(nearest) AND r.due_at = \(date))
            ORDER BY \(date) LIMIT \(literal: limit)
            """
        return try await sql.raw(query).all(decodingColumn: "id", as: String.self)
    }

    /// Sends one reminder, in one transaction: the license row is locked and read again, `decide`
    /// (the reminder rules) says what is due on it, and the reminder is claimed in
    /// `license_reminders`, keyed by (license, kind, threshold), only where no row exists for the
    /// license's current date. The claim, the larger thresholds counted done with it, the event and
    /// the mail commit together; a process that loses the claim to another writes nothing. A row
    /// left from an earlier date (the license was renewed since) is claimed again for the new one.
    /// Answers whether this call sent it.
    func remind(licenseId: String, kind: ReminderKind, now: Int64, decide: @escaping @Sendable (License, _ quiet: Bool) -> ReminderSend?) async throws -> Bool {
        let (lock, outbox) = (lockRows(of: "licenses"), self.outbox)
        return try await write { db in
            guard let row = try await db.raw("""
                SELECT \(Self.licenseColumns), reminders_unsubscribed_at, stripe_subscription_id, payment_subscription_id FROM licenses WHERE id = \(bind: licenseId)\(lock)
                """).first() else { return false }
            let license = try row.decode(model: License.self)
            let unsubscribed = try row.decode(column: "reminders_unsubscribed_at", as: Int64?.self) != nil
            // A subscription renews itself: its buyer is not asked to renew (the developer's webhook still goes).
            let renewsItself = try row.decode(column: "stripe_subscription_id", as: String?.self) != nil
                || row.decode(column: "payment_subscription_id", as: String?.self) != nil
            guard let send = decide(license, unsubscribed || (kind == .expires && renewsItself)) else { return false }
            guard try await Self.claimReminder(db, license: license, kind: kind, days: send.threshold, date: send.date, sent: true, now: now) else { return false }
            for days in send.passedOver {
                _ = try await Self.claimReminder(db, license: license, kind: kind, days: days, date: send.date, sent: false, now: now)
            }
            try await Self.record(send.entry, on: db, outbox: outbox)
            if let to = send.mailTo {
                try await Self.enqueueMail(db, tenantId: license.tenantId, kind: kind.mailKind, licenseId: license.id, to: to, at: now, daysBefore: send.threshold)
            }
            return true
        }
    }

    /// Inserts the reminder's row, or takes over one left from an earlier date; false when a row for
    /// this date exists (another process, or an earlier sweep, has it).
    private static func claimReminder(_ db: any SQLDatabase, license: License, kind: ReminderKind, days: Int, date: Int64, sent: Bool, now: Int64) async throws -> Bool {
        try await db.raw("""
            INSERT INTO license_reminders (license_id, kind, threshold_days, tenant_id, due_at, sent, created_at)
            VALUES (\(bind: license.id), \(bind: kind.rawValue), \(bind: days), \(bind: license.tenantId), \(bind: date), \(bind: sent), \(bind: now))
            ON CONFLICT (license_id, kind, threshold_days) DO UPDATE SET due_at = excluded.due_at, sent = excluded.sent, created_at = excluded.created_at
            WHERE license_reminders.due_at <> excluded.due_at
            RETURNING license_id
            """).first() != nil
    }

    /// A license's reminders so far, as (kind, threshold, date, sent) (tests, the mail composer).
    func reminders(licenseId: String) async throws -> [(kind: String, days: Int, dueAt: Int64, sent: Bool)] {
        try await sql.raw("""
            SELECT kind, threshold_days, due_at, sent FROM license_reminders WHERE license_id = \(bind: licenseId) ORDER BY kind, threshold_days DESC
            """).all().map {
            (try $0.decode(column: "kind", as: String.self), try $0.decode(column: "threshold_days", as: Int.self),
             try $0.decode(column: "due_at", as: Int64.self), try $0.decode(column: "sent", as: Bool.self))
        }
    }

    // MARK: Opting out

    /// The license a reminder's link names, and since when its reminder mails are off (nil: on).
    func reminderRecipient(licenseId: String) async throws -> (license: License, unsubscribedAt: Int64?)? {
        guard let row = try await sql.raw("SELECT \(Self.licenseColumns), reminders_unsubscribed_at FROM licenses WHERE id = \(bind: licenseId)").first() else { return nil }
        return (try row.decode(model: License.self), try row.decode(column: "reminders_unsubscribed_at", as: Int64?.self))
    }

    /// Turns the license's reminder mails off, audited the first time; asking again changes nothing.
    func unsubscribeFromReminders(licenseId: String, now: Int64) async throws -> ReminderOptOut {
        try await write { db in
            if let license = try await db.raw("""
                UPDATE licenses SET reminders_unsubscribed_at = \(bind: now)
                WHERE id = \(bind: licenseId) AND reminders_unsubscribed_at IS NULL
                RETURNING \(Self.licenseColumns)
                """).first(decoding: License.self) {
                try await Self.record(ChangeLog(tenantId: license.tenantId, now: now).remindersUnsubscribed(license.id), on: db, outbox: nil)
                return .unsubscribed(license)
            }
            guard let license = try await db.raw("SELECT \(Self.licenseColumns) FROM licenses WHERE id = \(bind: licenseId)").first(decoding: License.self) else {
                return .notFound
            }
            return .alreadyUnsubscribed(license)
        }
    }
}
