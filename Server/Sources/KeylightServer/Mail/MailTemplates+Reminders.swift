extension MailTemplates {
    // A reminder before a license ends (`expiry`) or its updates do (`updates`). Sent from the
    // tenant's sender name and reply-to; the wording is the server's. Never the license key: the
    // masked key names the license.

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

    /// A reminder's subject, text and HTML.
    static func renderReminderMail(_ context: [String: Any]) throws -> (subject: String, text: String, html: String) {
        (
            try render(reminderSubject, context, html: false),
            try render(reminderText, context, html: false),
            try render(reminderHTML, context, html: true)
        )
    }
}
