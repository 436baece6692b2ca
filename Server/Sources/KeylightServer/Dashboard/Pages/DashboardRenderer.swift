import Foundation
import HTTPTypes
import Hummingbird
import KeylightCore
import Mustache
import NIOCore

/// The dashboard's templates and static files, compiled into the binary and parsed once at
/// start-up, and the HTML responses they make.
struct DashboardRenderer: Sendable {
    let library: MustacheLibrary
    let stylesheet: ByteBuffer
    let script: ByteBuffer

    /// Why the dashboard's resources could not be loaded.
    struct LoadError: Error, CustomStringConvertible {
        var description: String
    }

    /// The templates, by name, as compiled into the binary.
    static let templates: [(name: String, bytes: [UInt8])] = [
        ("layout", PackageResources.layout_mustache), ("error", PackageResources.error_mustache),
        ("reminders_unsubscribe", PackageResources.reminders_unsubscribe_mustache),
        ("login", PackageResources.login_mustache), ("home", PackageResources.home_mustache),
        ("tenant", PackageResources.tenant_mustache), ("product", PackageResources.product_mustache),
        ("licenses", PackageResources.licenses_mustache), ("license", PackageResources.license_mustache),
        ("signing_keys", PackageResources.signing_keys_mustache), ("audit", PackageResources.audit_mustache),
        ("mail_settings", PackageResources.mail_settings_mustache), ("merchant", PackageResources.merchant_mustache), ("mail_preview", PackageResources.mail_preview_mustache),
        ("insights", PackageResources.insights_mustache),
        ("portal_layout", PackageResources.portal_layout_mustache), ("portal", PackageResources.portal_mustache), ("account", PackageResources.account_mustache),
        ("webhooks", PackageResources.webhooks_mustache), ("team", PackageResources.team_mustache), ("tokens", PackageResources.tokens_mustache),
        ("releases", PackageResources.releases_mustache),
        ("security", PackageResources.security_mustache), ("credentials", PackageResources.credentials_mustache),
    ]

    static func load() async throws -> DashboardRenderer {
        var library = MustacheLibrary()
        for (name, bytes) in templates {
            do {
                try library.register(String(decoding: bytes, as: UTF8.self), named: name)
            } catch {
                throw LoadError(description: "dashboard template \(name).mustache does not parse: \(error)")
            }
        }
        return DashboardRenderer(
            library: library,
            stylesheet: ByteBuffer(bytes: PackageResources.dashboard_css),
            script: ByteBuffer(bytes: PackageResources.dashboard_js)
        )
    }

    /// Headers on every dashboard page: nothing from elsewhere, no framing, no caching of pages
    /// that may show a key once.
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy: "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        .init("X-Frame-Options")!: "DENY",
        .xContentTypeOptions: "nosniff",
        .init("Referrer-Policy")!: "same-origin",
        .cacheControl: "no-store",
    ]

    func page(_ template: String, _ view: Any, status: HTTPResponse.Status = .ok) -> Response {
        let html = library.render(view, withTemplate: template) ?? "template \(template) missing"
        var headers = Self.securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// An offline activation response as a file download (the portal and the license page).
    func download(_ response: OfflineActivationResponse) -> Response {
        var headers = Self.securityHeaders
        headers[.contentType] = "text/plain; charset=utf-8"
        headers[.contentDisposition] = "attachment; filename=\"keylight-activation-\(response.instanceId.prefix(8)).txt\""
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: response.armored)))
    }

    func asset(_ buffer: ByteBuffer, contentType: String) -> Response {
        Response(
            status: .ok,
            headers: [.contentType: contentType, .cacheControl: "public, max-age=3600", .xContentTypeOptions: "nosniff"],
            body: .init(byteBuffer: buffer)
        )
    }
}
