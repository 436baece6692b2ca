import Foundation
import KeylightCore
import Mustache

/// A tenant's mail settings as the API shows them: each field null where the default applies,
/// and the defaults beside them so an editor can start from them.
struct MailSettingsBody: Encodable {
    var sender_name: String?
    var reply_to: String?
    var subject_template: String?
    var text_template: String?
    var html_template: String?
    var defaults: Defaults
    var variables: [String: String]

    struct Defaults: Encodable {
        var subject_template = MailTemplates.subject
        var text_template = MailTemplates.text
        var html_template = MailTemplates.html
    }

    enum CodingKeys: String, CodingKey {
        case sender_name, reply_to, subject_template, text_template, html_template, defaults, variables
    }

    /// A field that is the default is `null`, not left out: a client sees every setting there is.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sender_name, forKey: .sender_name)
        try container.encode(reply_to, forKey: .reply_to)
        try container.encode(subject_template, forKey: .subject_template)
        try container.encode(text_template, forKey: .text_template)
        try container.encode(html_template, forKey: .html_template)
        try container.encode(defaults, forKey: .defaults)
        try container.encode(variables, forKey: .variables)
    }

    init(_ settings: MailSettings) {
        sender_name = settings.senderName
        reply_to = settings.replyTo
        subject_template = settings.subjectTemplate
        text_template = settings.textTemplate
        html_template = settings.htmlTemplate
        defaults = Defaults()
        variables = Dictionary(uniqueKeysWithValues: MailTemplates.variables.map { ($0.name, $0.meaning) })
    }
}

/// A rendered sample mail (`POST …/mail/preview`, the dashboard's preview).
struct MailPreviewBody: Encodable {
    var from: String
    var reply_to: String?
    var subject: String
    var text: String
    var html: String
}

extension AdminService {
    // Lengths in Unicode code points, as openapi.yaml's maxLength counts them.
    static let maxTemplateLength = 32 * 1024
    static let maxSubjectTemplateLength = 500

    func mailSettings(tenantId: String) async throws -> MailSettings {
        _ = try await requireTenant(tenantId)
        return try await database.mailSettings(tenantId: tenantId) ?? MailSettings()
    }

    /// Checks and stores the tenant's mail settings, audited. Every field is checked before
    /// anything is written: a name or address with a line break, a template that does not parse
    /// or a subject template spanning lines is 400 and changes nothing.
    func setMailSettings(tenantId: String, _ body: MailSettings, actor: AuditActor) async throws -> MailSettings {
        _ = try await requireTenant(tenantId)
        let settings = try Self.mailSettings(body)
        try await database.putMailSettings(settings, tenantId: tenantId, now: clock.unixSeconds, actor: actor)
        return settings
    }

    /// A sample mail rendered from `body` (or, when nil, the stored settings), with the tenant's
    /// first product and a made-up key: exactly what a buyer would receive.
    func previewMail(tenantId: String, _ body: MailSettings?) async throws -> MailPreviewBody {
        let tenant = try await requireTenant(tenantId)
        let settings: MailSettings
        if let body { settings = try Self.mailSettings(body) } else { settings = try await database.mailSettings(tenantId: tenantId) ?? MailSettings() }
        let product = try await database.products(tenantId: tenantId).first
        let key = try LicenseKey.generate(prefix: product?.keyPrefix ?? "KEY")
        let fromAddress = try mailFrom ?? MailAddress("sales@example.com")
        let sender = try MailAddress(fromAddress.address, displayName: settings.senderName ?? fromAddress.displayName ?? tenant.name)
        let portalURL = product.flatMap { product in publicURL.map { "\($0)/portal/\(tenantId)/\(product.id)" } }
        let context = MailTemplates.sampleContext(
            tenantName: tenant.name, productName: product?.name ?? "Your App", licenseKey: key.text, portalURL: portalURL, senderName: sender.displayName
        )
        let (subject, text, html) = try MailTemplates.renderLicenseMail(settings, context)
        return MailPreviewBody(from: sender.readable, reply_to: settings.replyTo, subject: subject, text: text, html: html)
    }

    /// `body` checked (a `PUT …/mail` body is a ``MailSettings``; PUT replaces, and an absent,
    /// null or blank field is the default).
    static func mailSettings(_ body: MailSettings) throws(APIError) -> MailSettings {
        func blankIsNil(_ value: String?) -> String? { value.flatMap { $0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : $0 } }
        var settings = MailSettings()
        if let name = blankIsNil(body.senderName) {
            guard !MailAddress.hasLineBreakOrControl(name) else { throw .invalidRequest("Field sender_name contains a line break or control character.") }
            guard name.unicodeScalars.count <= 100 else { throw .invalidRequest("Field sender_name is longer than 100 characters.") }
            settings.senderName = name.trimmingCharacters(in: .whitespaces)
        }
        if let replyTo = blankIsNil(body.replyTo) {
            do {
                settings.replyTo = try MailAddress(parsing: replyTo).readable
            } catch {
                throw .invalidRequest("Field reply_to: \(error.description).")
            }
        }
        if let subject = blankIsNil(body.subjectTemplate) {
            guard !MailAddress.hasLineBreakOrControl(subject) else { throw .invalidRequest("Field subject_template contains a line break or control character.") }
            guard subject.unicodeScalars.count <= maxSubjectTemplateLength else { throw .invalidRequest("Field subject_template is longer than \(maxSubjectTemplateLength) characters.") }
            settings.subjectTemplate = try template(subject, "subject_template", html: false)
        }
        if let text = blankIsNil(body.textTemplate) { settings.textTemplate = try template(text, "text_template", html: false) }
        if let html = blankIsNil(body.htmlTemplate) { settings.htmlTemplate = try template(html, "html_template", html: true) }
        return settings
    }

    /// A template that parses, within the size limit.
    static func template(_ source: String, _ field: String, html: Bool) throws(APIError) -> String {
        guard source.unicodeScalars.count <= maxTemplateLength else { throw .invalidRequest("Field \(field) is longer than \(maxTemplateLength) characters.") }
        do {
            _ = try MailTemplates.compile(source, html: html)
        } catch let error as MustacheTemplate.ParserError {
            // Columns of the template as typed: the text pragma sits before its first line.
            let line = error.context.lineNumber
            let column = html || line > 1 ? error.context.columnNumber : max(1, error.context.columnNumber - MailTemplates.textPragma.count)
            throw .invalidRequest("Field \(field) is not a valid Mustache template (line \(line), column \(column): \(error.error)).")
        } catch {
            throw .invalidRequest("Field \(field) is not a valid Mustache template.")
        }
        return source
    }
}
