import SQLKit

extension Migration {
    /// A tenant's own wording for reminder mails (subject, text and HTML templates; null: the
    /// server's). New nullable columns of the reminder settings only.
    static let reminderTemplates = Migration(name: "0021_reminder_templates") { db, _ in
        try await db.addColumns(to: "reminder_settings", [("subject_template", .text), ("text_template", .text), ("html_template", .text)])
    }
}
