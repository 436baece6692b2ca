import HTTPTypes
import Hummingbird
import NIOCore

/// `/dashboard/t/<tenant>/mail`: the tenant's mail to buyers — sender name, reply-to, and the
/// subject and bodies as Mustache templates — with a preview of exactly what a buyer receives.
///
/// The preview is a document of its own (`mail/preview`), shown in a frame on the editor page.
/// The editor's Preview button posts the unsaved form into that frame, so drafts are previewed
/// without JavaScript and without being saved. The preview runs under a `sandbox` policy: a
/// template's HTML can neither run script nor reach the dashboard's origin.
struct MailSettingsController: Sendable {
    let dashboard: DashboardRoutes
    var admin: AdminService { dashboard.admin }
    var pages: DashboardPages { dashboard.pages }

    struct MailSettingsForm: Decodable {
        @FormText var senderName: String?
        @FormText var replyTo: String?
        @FormText var subjectTemplate: String?
        @FormText var textTemplate: String?
        @FormText var htmlTemplate: String?
        enum CodingKeys: String, CodingKey {
            case senderName = "sender_name", replyTo = "reply_to", subjectTemplate = "subject_template"
            case textTemplate = "text_template", htmlTemplate = "html_template"
        }

        /// The request the API takes. A template left as the default is stored as "default", so
        /// a later release's better default reaches the tenant.
        var settings: MailSettings {
            func unlessDefault(_ value: String?, _ standard: String) -> String? {
                value.flatMap { Self.sameText($0, standard) ? nil : $0 }
            }
            return MailSettings(
                senderName: senderName, replyTo: replyTo,
                subjectTemplate: unlessDefault(subjectTemplate, MailTemplates.subject),
                textTemplate: unlessDefault(textTemplate, MailTemplates.text),
                htmlTemplate: unlessDefault(htmlTemplate, MailTemplates.html)
            )
        }

        /// Browsers send a textarea's line breaks as CR LF.
        static func sameText(_ a: String, _ b: String) -> Bool {
            func clean(_ text: String) -> String { text.replacingOccurrences(of: "\r\n", with: "\n").trimmingCharacters(in: .whitespacesAndNewlines) }
            return clean(a) == clean(b)
        }
    }

    func register(on group: RouterGroup<DashboardContext>) {
        let mail = group.signedIn("/t/:tenant/mail", dashboard: dashboard, back: Self.page)
        mail.get(.mailSettingsRead) { _, context -> Response in
            let tenantId = TenantsController.tenantId(context)
            let settings = try await admin.mailSettings(tenantId: tenantId)
            return pages.page("mail_settings", try await view(tenantId, context, fields: .init(settings)))
        }
        mail.post(.mailSettingsWrite, form: MailSettingsForm.self) { form, _, context -> Response in
            let tenantId = TenantsController.tenantId(context)
            do {
                _ = try await admin.setMailSettings(tenantId: tenantId, form.settings, actor: try context.requireUser().actor)
            } catch let error as APIError where error.status == .badRequest {
                // Shown beside the fields as typed, so an edit is not lost to a typo.
                var view = try await view(tenantId, context, fields: .init(form))
                view.chrome.error = error.message
                return pages.page("mail_settings", view, status: .badRequest)
            }
            pages.flash(context, "Mail settings saved.")
            return .redirect(to: Self.page(context))
        }
        mail.post("/reset", .mailSettingsWrite) { _, context -> Response in
            _ = try await admin.setMailSettings(tenantId: TenantsController.tenantId(context), MailSettings(), actor: try context.requireUser().actor)
            pages.flash(context, "Mail settings reset to the defaults.")
            return .redirect(to: Self.page(context))
        }
        mail.get("/preview", .mailSettingsRead) { _, context -> Response in
            preview(try await admin.previewMail(tenantId: TenantsController.tenantId(context), nil))
        }
        mail.post("/preview", .mailSettingsRead, form: MailSettingsForm.self) { form, _, context -> Response in
            do {
                return preview(try await admin.previewMail(tenantId: TenantsController.tenantId(context), form.settings))
            } catch let error as APIError where error.status == .badRequest {
                return preview(error: error.message)
            }
        }
    }

    @Sendable static func page(_ context: DashboardContext) -> String {
        TenantsController.tenantPage(context) + "/mail"
    }

    private func view(_ tenantId: String, _ context: DashboardContext, fields: MailSettingsView.Fields) async throws -> MailSettingsView {
        let tenant = try await admin.requireTenant(tenantId)
        return MailSettingsView(
            chrome: pages.chrome("Mail · \(tenant.name)", context), tenantId: tenantId, tenantName: tenant.name,
            sender: admin.mailFrom?.readable, fields: fields,
            variables: MailTemplates.variables.map { .init(name: $0.name, meaning: $0.meaning) }
        )
    }

    /// Headers for the preview document: shown only in a frame of the dashboard, in a sandbox
    /// without script; inline styles and remote images as a mail client would show them.
    static let previewHeaders: HTTPFields = [
        .contentSecurityPolicy: "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; frame-ancestors 'self'; base-uri 'none'; form-action 'none'",
        .init("X-Frame-Options")!: "SAMEORIGIN",
        .xContentTypeOptions: "nosniff",
        .init("Referrer-Policy")!: "no-referrer",
        .cacheControl: "no-store",
        .contentType: "text/html; charset=utf-8",
    ]

    private func preview(_ body: MailPreviewBody? = nil, error: String? = nil) -> Response {
        let view = MailPreviewView(from: body?.from ?? "", replyTo: body?.reply_to, subject: body?.subject ?? "", text: body?.text ?? "", html: body?.html ?? "", error: error)
        let html = pages.renderer.library.render(view, withTemplate: "mail_preview") ?? ""
        return Response(status: error == nil ? .ok : .badRequest, headers: Self.previewHeaders, body: .init(byteBuffer: ByteBuffer(string: html)))
    }
}
