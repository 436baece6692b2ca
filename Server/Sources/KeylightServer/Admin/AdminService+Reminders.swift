extension AdminService {
    /// Reminders before licenses end: the sweep every process runs, and the buyers' opt-out links.
    var reminders: ReminderService {
        ReminderService(database: database, clock: clock, sealer: sealer, publicURL: publicURL, mailConfigured: mailBuyers)
    }

    func reminderSettings(tenantId: String) async throws -> ReminderSettings {
        _ = try await requireTenant(tenantId)
        return try await database.reminderSettings(tenantId: tenantId) ?? ReminderSettings()
    }

    /// Checks and stores the tenant's reminder settings, audited; a bad field is 400 and changes
    /// nothing. Mailing buyers needs mail (422 `MAIL_NOT_CONFIGURED`) and `--public-url`, which
    /// every reminder mail's opt-out link starts with (422 `PUBLIC_URL_NOT_SET`).
    func setReminderSettings(tenantId: String, _ body: ReminderSettingsRequest, actor: AuditActor) async throws -> ReminderSettings {
        _ = try await requireTenant(tenantId)
        let settings = try body.settings()
        if settings.mailBuyers {
            guard mailBuyers else { throw APIError.mailNotConfigured }
            guard publicURL != nil else { throw APIError.publicURLNotSet }
        }
        try await database.putReminderSettings(settings, tenantId: tenantId, now: clock.unixSeconds, actor: actor)
        return settings
    }
}
