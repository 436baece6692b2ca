import Foundation
import HTTPTypes
import Hummingbird
import KeylightCore
import Mustache
import NIOCore

/// The dashboard's templates and static files, loaded once at start-up from the package's
/// resources, and the HTML responses they make.
struct DashboardRenderer: Sendable {
    let library: MustacheLibrary
    let stylesheet: ByteBuffer
    let script: ByteBuffer

    /// Why the dashboard's resources could not be loaded.
    struct LoadError: Error, CustomStringConvertible {
        var description: String
    }

    static func load() async throws -> DashboardRenderer {
        guard let root = Bundle.module.resourceURL else { throw LoadError(description: "the dashboard resources are missing from the build") }
        let library = try await MustacheLibrary(directory: root.path)
        for page in ["layout", "login", "home", "tenant", "product", "licenses", "license", "signing_keys", "audit", "error", "portal_layout", "portal"] where library.getTemplate(named: page) == nil {
            throw LoadError(description: "dashboard template \(page).mustache is missing")
        }
        let css = try Data(contentsOf: root.appendingPathComponent("Static/dashboard.css"))
        let js = try Data(contentsOf: root.appendingPathComponent("Static/dashboard.js"))
        return DashboardRenderer(library: library, stylesheet: ByteBuffer(bytes: css), script: ByteBuffer(bytes: js))
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
