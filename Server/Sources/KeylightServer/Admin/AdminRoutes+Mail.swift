import Hummingbird

/// A tenant's mail settings and renewal reminders.
extension AdminRoutes {
    /// Mail settings (read, write, preview) and reminder settings.
    func registerMail(on admin: AdminRouter) {
        admin.get("/tenants/:tenant/mail", .mailSettingsRead) { _, context in
            try JSONBody.response(MailSettingsBody(try await service.mailSettings(tenantId: try context.parameters.require("tenant"))))
        }
        admin.put("/tenants/:tenant/mail", .mailSettingsWrite, body: MailSettings.self) { body, _, context in
            let settings = try await service.setMailSettings(tenantId: try context.parameters.require("tenant"), body, actor: context.actor)
            return try JSONBody.response(MailSettingsBody(settings))
        }
        admin.post("/tenants/:tenant/mail/preview", .mailSettingsRead, optionalBody: MailSettings.self) { body, _, context in
            // No body previews the stored settings; a body previews those settings unsaved.
            return try JSONBody.response(try await service.previewMail(tenantId: try context.parameters.require("tenant"), body))
        }
        admin.get("/tenants/:tenant/reminders", .mailSettingsRead) { _, context in
            try JSONBody.response(ReminderSettingsBody(try await service.reminderSettings(tenantId: try context.parameters.require("tenant"))))
        }
        admin.put("/tenants/:tenant/reminders", .mailSettingsWrite, body: ReminderSettingsRequest.self) { body, _, context in
            let settings = try await service.setReminderSettings(tenantId: try context.parameters.require("tenant"), body, actor: context.actor)
            return try JSONBody.response(ReminderSettingsBody(settings))
        }
    }
}
