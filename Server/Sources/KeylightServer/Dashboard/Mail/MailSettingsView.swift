/// `mail_settings.mustache`: the editor.
struct MailSettingsView: Sendable {
    var chrome: Chrome
    var tenantId: String
    var tenantName: String
    /// The server's sender (`--mail-from`); nil when the server does not send mail.
    var sender: String?
    var fields: Fields
    var variables: [Variable]

    /// The form's values: the stored settings with the defaults filled in, or what was typed.
    struct Fields: Sendable {
        var senderName: String
        var replyTo: String
        var subjectTemplate: String
        var textTemplate: String
        var htmlTemplate: String

        init(_ settings: MailSettings) {
            senderName = settings.senderName ?? ""
            replyTo = settings.replyTo ?? ""
            subjectTemplate = settings.subjectTemplate ?? MailTemplates.subject
            textTemplate = settings.textTemplate ?? MailTemplates.text
            htmlTemplate = settings.htmlTemplate ?? MailTemplates.html
        }

        init(_ form: MailSettingsController.MailSettingsForm) {
            senderName = form.senderName ?? ""
            replyTo = form.replyTo ?? ""
            subjectTemplate = form.subjectTemplate ?? ""
            textTemplate = form.textTemplate ?? ""
            htmlTemplate = form.htmlTemplate ?? ""
        }
    }

    struct Variable: Sendable {
        var name: String
        var meaning: String
    }
}

/// `mail_preview.mustache`: one rendered sample mail.
struct MailPreviewView: Sendable {
    var from: String
    var replyTo: String?
    var subject: String
    var text: String
    var html: String
    var error: String?
}
