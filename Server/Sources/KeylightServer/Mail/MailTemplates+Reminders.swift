extension MailTemplates {
    // A reminder before a license ends (`expiry`) or its updates do (`updates`). Sent from the
    // tenant's sender name and reply-to, in the tenant's wording when it set templates (the
    // reminder settings), else the server's. Never the license key: the masked key names the license.

    static let reminderSubject = "{{#expiry}}Your {{product_name}} license ends in {{days}}{{/expiry}}{{#updates}}Your {{product_name}} updates end in {{days}}{{/updates}}"

    static let reminderText = """
    {{#expiry}}Your {{product_name}} license{{#key_type_name}} ({{key_type_name}}){{/key_type_name}}, {{masked_key}}, ends on {{date}}: in {{days}}.

    To keep using {{product_name}} after that, renew it here:
    {{/expiry}}
    {{#updates}}The updates included with your {{product_name}} license{{#key_type_name}} ({{key_type_name}}){{/key_type_name}}, {{masked_key}}, end on {{date}}: in {{days}}. The versions released until then keep working.

    To keep getting new versions, renew here:
    {{/updates}}
    {{renewal_url}}

    You get this reminder because {{product_name}} was bought with this address. To get no more reminders about this license:
    {{unsubscribe_url}}
    {{#sender_name}}

    {{sender_name}}
    {{/sender_name}}
    """

    static let reminderHTML = """
    <!doctype html>
    <html><body style="margin:0;padding:24px;background:#f3f4f6;font-family:-apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif;color:#111827">
    <table role="presentation" width="560" align="center" cellpadding="0" cellspacing="0" style="background:#ffffff;border-radius:8px;padding:32px"><tr><td>
    {{#expiry}}<h1 style="font-size:20px;margin:0 0 16px">Your {{product_name}} license ends in {{days}}</h1>
    <p style="margin:0 0 16px">Your {{product_name}} license{{#key_type_name}} ({{key_type_name}}){{/key_type_name}}, <code>{{masked_key}}</code>, ends on <b>{{date}}</b>.</p>
    <p style="margin:0 0 16px"><a href="{{renewal_url}}" style="color:#2563eb">Renew it</a> to keep using {{product_name}}.</p>{{/expiry}}
    {{#updates}}<h1 style="font-size:20px;margin:0 0 16px">Your {{product_name}} updates end in {{days}}</h1>
    <p style="margin:0 0 16px">The updates included with your {{product_name}} license{{#key_type_name}} ({{key_type_name}}){{/key_type_name}}, <code>{{masked_key}}</code>, end on <b>{{date}}</b>. The versions released until then keep working.</p>
    <p style="margin:0 0 16px"><a href="{{renewal_url}}" style="color:#2563eb">Renew</a> to keep getting new versions.</p>{{/updates}}
    <p style="margin:0;color:#6b7280;font-size:13px">You get this reminder because {{product_name}} was bought with this address. <a href="{{unsubscribe_url}}" style="color:#6b7280">No more reminders about this license</a>.{{#sender_name}}<br>{{sender_name}}{{/sender_name}}</p>
    </td></tr></table>
    </body></html>
    """

    /// The variables a reminder template may use, for the settings' answer.
    static let reminderVariables: [(name: String, meaning: String)] = [
        ("expiry", "set (a section) when the reminder is about the license's end"),
        ("updates", "set (a section) when it is about the end of its updates"),
        ("product_name", "the product's name"), ("key_type_name", "the license's key type, when it has a name"),
        ("masked_key", "the license key with its middle hidden (never the key)"), ("date", "the date, yyyy-mm-dd"),
        ("days", "what is left: \"1 day\", \"7 days\""), ("days_before", "the threshold reached, in days"),
        ("renewal_url", "the buyer's account, with the renewal and upgrade prices"), ("unsubscribe_url", "no more reminders about this license"),
        ("tenant_name", "the seller"), ("sender_name", "the sender's name"), ("customer_email", "the buyer's address"),
    ]

    /// A reminder's subject, text and HTML, in the tenant's wording where it has one.
    static func renderReminderMail(_ context: [String: Any], settings: ReminderSettings? = nil) throws -> (subject: String, text: String, html: String) {
        (
            try render(settings?.subjectTemplate ?? reminderSubject, context, html: false),
            try render(settings?.textTemplate ?? reminderText, context, html: false),
            try render(settings?.htmlTemplate ?? reminderHTML, context, html: true)
        )
    }
}
