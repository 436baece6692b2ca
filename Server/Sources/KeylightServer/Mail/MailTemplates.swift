import Foundation
import Mustache

/// A tenant's mail: who it is from, where replies go, and the subject and bodies as Mustache
/// templates (each field nil: the default).
public struct MailSettings: Codable, Sendable, Hashable {
    public var senderName: String?
    public var replyTo: String?
    public var subjectTemplate: String?
    public var textTemplate: String?
    public var htmlTemplate: String?

    public init(senderName: String? = nil, replyTo: String? = nil, subjectTemplate: String? = nil, textTemplate: String? = nil, htmlTemplate: String? = nil) {
        self.senderName = senderName
        self.replyTo = replyTo
        self.subjectTemplate = subjectTemplate
        self.textTemplate = textTemplate
        self.htmlTemplate = htmlTemplate
    }

    enum CodingKeys: String, CodingKey {
        case senderName = "sender_name", replyTo = "reply_to", subjectTemplate = "subject_template"
        case textTemplate = "text_template", htmlTemplate = "html_template"
    }
}

/// The default templates: what a buyer gets when the developer has written none.
enum MailTemplates {
    static let subject = "Your {{product_name}} license key"

    static let text = """
    Thank you for buying {{product_name}}{{#key_type_name}} ({{key_type_name}}){{/key_type_name}}.

    Your license key:

        {{license_key}}

    To activate: open {{product_name}}, choose "Enter License Key", and paste the key above.
    {{#expires}}The license runs until {{expires}}.{{/expires}}
    {{#portal_url}}
    See the devices using your license, or free one, at:
    {{portal_url}}
    {{/portal_url}}

    Keep this mail: it is your proof of purchase.
    {{#sender_name}}
    {{sender_name}}
    {{/sender_name}}
    """

    static let html = """
    <!doctype html>
    <html><body style="margin:0;padding:24px;background:#f3f4f6;font-family:-apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif;color:#111827">
    <table role="presentation" width="100%" cellpadding="0" cellspacing="0"><tr><td align="center">
    <table role="presentation" width="560" cellpadding="0" cellspacing="0" style="background:#ffffff;border-radius:8px;padding:32px">
    <tr><td>
    <h1 style="font-size:20px;margin:0 0 16px">Your {{product_name}} license</h1>
    <p style="margin:0 0 16px">Thank you for buying {{product_name}}{{#key_type_name}} ({{key_type_name}}){{/key_type_name}}. Your license key:</p>
    <p style="margin:0 0 16px;padding:12px 16px;background:#f9fafb;border:1px solid #e5e7eb;border-radius:6px;font-family:ui-monospace,Menlo,monospace;font-size:16px;letter-spacing:1px">{{license_key}}</p>
    <p style="margin:0 0 16px">To activate: open {{product_name}}, choose <b>Enter License Key</b>, and paste the key above.</p>
    {{#expires}}<p style="margin:0 0 16px">The license runs until {{expires}}.</p>{{/expires}}
    {{#portal_url}}<p style="margin:0 0 16px"><a href="{{portal_url}}" style="color:#2563eb">See the devices using your license, or free one</a>.</p>{{/portal_url}}
    <p style="margin:0;color:#6b7280;font-size:13px">Keep this mail: it is your proof of purchase.{{#sender_name}}<br>{{sender_name}}{{/sender_name}}</p>
    </td></tr></table>
    </td></tr></table>
    </body></html>
    """

    static let lostSubject = "Your license keys"

    static let lostText = """
    You asked for the license keys bought with this address. Here they are:
    {{#licenses}}

    {{product_name}}{{#key_type_name}} ({{key_type_name}}){{/key_type_name}}:
        {{license_key}}
    {{#portal_url}}
        Devices: {{portal_url}}
    {{/portal_url}}
    {{/licenses}}

    If you did not ask for this mail, you can ignore it: nobody else received the keys.
    """

    static let lostHTML = """
    <!doctype html>
    <html><body style="margin:0;padding:24px;background:#f3f4f6;font-family:-apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif;color:#111827">
    <table role="presentation" width="560" align="center" cellpadding="0" cellspacing="0" style="background:#ffffff;border-radius:8px;padding:32px"><tr><td>
    <h1 style="font-size:20px;margin:0 0 16px">Your license keys</h1>
    <p style="margin:0 0 16px">You asked for the license keys bought with this address. Here they are:</p>
    {{#licenses}}<p style="margin:0 0 4px"><b>{{product_name}}</b>{{#key_type_name}} ({{key_type_name}}){{/key_type_name}}</p>
    <p style="margin:0 0 16px;padding:12px 16px;background:#f9fafb;border:1px solid #e5e7eb;border-radius:6px;font-family:ui-monospace,Menlo,monospace">{{license_key}}</p>
    {{#portal_url}}<p style="margin:-8px 0 16px"><a href="{{portal_url}}" style="color:#2563eb">Manage its devices</a></p>{{/portal_url}}{{/licenses}}
    <p style="margin:0;color:#6b7280;font-size:13px">If you did not ask for this mail, you can ignore it: nobody else received the keys.</p>
    </td></tr></table>
    </body></html>
    """

    /// A license mail's subject, text and HTML from the tenant's templates (or the defaults).
    static func renderLicenseMail(_ settings: MailSettings, _ context: [String: Any]) throws -> (subject: String, text: String, html: String) {
        (
            try render(settings.subjectTemplate ?? subject, context, html: false),
            try render(settings.textTemplate ?? text, context, html: false),
            try render(settings.htmlTemplate ?? html, context, html: true)
        )
    }

    /// What a template can use, for the editor's help and the preview.
    static let variables: [(name: String, meaning: String)] = [
        ("product_name", "the product's name"),
        ("key_type_name", "the key type's display name (may be empty)"),
        ("license_key", "the license key"),
        ("expires", "the license's end date, YYYY-MM-DD (empty when it does not expire)"),
        ("portal_url", "the customer portal of the product (empty when it is off or --public-url is not set)"),
        ("customer_email", "the buyer's address"),
        ("tenant_name", "your tenant's name"),
        ("sender_name", "the sender name"),
    ]

    /// A made-up license for the preview.
    static func sampleContext(tenantName: String, productName: String, licenseKey: String, portalURL: String?, senderName: String?) -> [String: Any] {
        var context: [String: Any] = [
            "tenant_name": tenantName, "customer_email": "buyer@example.com", "sender_name": senderName ?? "",
            "product_name": productName, "key_type_name": "Personal", "license_key": licenseKey,
        ]
        if let portalURL { context["portal_url"] = portalURL }
        return context
    }

    /// Renders `template`: as text (no HTML escaping) unless `html`.
    static func render(_ template: String, _ context: [String: Any], html: Bool) throws -> String {
        try compile(template, html: html).render(context)
    }

    /// The template as it is rendered: the text ones behind a pragma that turns escaping off. A
    /// template is checked with this too, since the pragma can change how it parses (a combining
    /// mark at its start joins the pragma's closing brace into one character).
    static func compile(_ template: String, html: Bool) throws -> MustacheTemplate {
        try MustacheTemplate(string: html ? template : textPragma + template)
    }

    static let textPragma = "{{% CONTENT_TYPE: TEXT}}"
}
