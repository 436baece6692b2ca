import Foundation
import Hummingbird

/// A product's releases (`/dashboard/t/{t}/p/{p}/releases`): the appcast's address and Sparkle
/// key, each release with its files, downloads and the devices on it, new drafts, publishing and
/// yanking, the public feed switch, and what a higher minimum macOS would strand.
///
/// Files are not uploaded here: `keylight release publish` and the admin API stream them, which a
/// form post (read whole, capped at 64 KiB) cannot.
struct ReleasesController: Sendable {
    let dashboard: DashboardRoutes
    var admin: AdminService { dashboard.admin }
    var pages: DashboardPages { dashboard.pages }

    struct DraftForm: Decodable {
        @FormText var version: String?
        @FormText var shortVersion: String?
        @FormText var channel: String?
        /// `YYYY-MM-DD` (a date input), read as midnight UTC, as the SDK reads `KeylightReleaseDate`.
        @FormText var releasedAt: String?
        @FormText var minSystemVersion: String?
        @FormText var notesMarkdown: String?
        @FormCheckbox var critical: Bool
        @FormText var criticalBelow: String?
        enum CodingKeys: String, CodingKey {
            case version, channel, critical
            case shortVersion = "short_version", releasedAt = "released_at", minSystemVersion = "min_system_version"
            case notesMarkdown = "notes_markdown", criticalBelow = "critical_below"
        }
    }

    struct FeedForm: Decodable {
        @FormCheckbox var publicFeed: Bool
        enum CodingKeys: String, CodingKey { case publicFeed = "public_feed" }
    }

    func register(on group: RouterGroup<DashboardContext>) {
        let routes = group.signedIn("/t/:tenant/p/:product/releases", dashboard: dashboard, back: Self.page)
        routes.get(.productsRead) { request, context -> Response in
            let releases = try service()
            var view = try await view(request, context, releases)
            guard let typed = request.uri.queryParameters.get("min_system")?.trimmingCharacters(in: .whitespaces), !typed.isEmpty else {
                return pages.page("releases", view)
            }
            view.minSystem = typed
            do {
                view.strand = try await releases.strandPreview(tenantId: view.tenantId, productId: view.productId, minimumSystem: typed)
            } catch let error as APIError {
                // The page with the reason beside the field: the rest of it is still worth showing.
                view.strandError = error.message
                return pages.page("releases", view, status: error.status)
            }
            return pages.page("releases", view)
        }
        routes.post(.releasesPublish, form: DraftForm.self) { form, _, context -> Response in
            let releases = try service()
            let (tenantId, productId) = ProductsController.ids(context)
            var releasedAt: Int64?
            if let text = form.releasedAt {
                guard let day = CivilDay.parse(text) else { throw APIError.invalidRequest("The release date is a date such as 2026-11-22.") }
                releasedAt = day * 86_400
            }
            let release = try await admin.createRelease(tenantId: tenantId, productId: productId, CreateReleaseRequest(
                version: form.version, short_version: form.shortVersion, channel: form.channel, released_at: releasedAt,
                min_system_version: form.minSystemVersion, notes_markdown: form.notesMarkdown, critical: form.critical, critical_below: form.criticalBelow
            ), actor: try context.requireUser().actor)
            // The Sparkle key exists from the first release on: the app ships it before any build is published.
            _ = try await releases.updateSettings(tenantId: tenantId, productId: productId)
            pages.flash(context, "Draft \(release.shortVersion) (\(release.version)) created. Upload its file with keylight release publish or the admin API, then publish it here.")
            return .redirect(to: Self.page(context))
        }
        for (action, state) in [("publish", Release.State.published), ("yank", .yanked)] {
            routes.post(RouterPath("/:id/\(action)"), .releasesPublish) { _, context -> Response in
                let releases = try service()
                let (tenantId, productId) = ProductsController.ids(context)
                let release = try await admin.moveRelease(
                    tenantId: tenantId, productId: productId, id: try context.parameters.require("id"), to: state, actor: try context.requireUser().actor
                )
                releases.forgetFeed(tenantId: tenantId, productId: productId)
                pages.flash(context, state == .published
                    ? "Release \(release.shortVersion) (\(release.version)) published: it is in the \(release.channel) feed."
                    : "Release \(release.shortVersion) (\(release.version)) yanked: it left every feed, and its links stop working.")
                return .redirect(to: Self.page(context))
            }
        }
        routes.post("/feed", .productsWrite, form: FeedForm.self) { form, _, context -> Response in
            let releases = try service()
            let (tenantId, productId) = ProductsController.ids(context)
            // Settings are made on first need: only for a product that exists.
            _ = try await admin.requireProduct(tenantId: tenantId, productId: productId)
            let settings = try await releases.changeUpdateSettings(
                tenantId: tenantId, productId: productId, publicFeed: form.publicFeed, sparklePublicKey: nil, actor: try context.requireUser().actor
            )
            pages.flash(context, settings.publicFeed
                ? "The feed is public: anyone may read it and download its builds."
                : "The feed is private: a device sends its lease to read it.")
            return .redirect(to: Self.page(context))
        }
    }

    @Sendable static func page(_ context: DashboardContext) -> String {
        ProductsController.productPage(context) + "/releases"
    }

    /// The releases service; a server assembled without one has no releases page.
    private func service() throws -> ReleaseService {
        guard let releases = dashboard.releases else { throw APIError.notFound("Releases") }
        return releases
    }

    private func view(_ request: Request, _ context: DashboardContext, _ releases: ReleaseService) async throws -> ReleasesView {
        let (tenantId, productId) = ProductsController.ids(context)
        let tenant = try await admin.requireTenant(tenantId)
        let product = try await admin.requireProduct(tenantId: tenantId, productId: productId)
        let principal = try context.requireUser().principal
        return ReleasesView(
            chrome: pages.chrome("Releases · \(product.name)", context), tenant: tenant, product: product,
            serverURL: dashboard.serverURL(request), publicURL: dashboard.publicURL,
            settings: try await releases.updateSettings(tenantId: tenant.id, productId: product.id),
            figures: try await releases.releaseFigures(tenantId: tenant.id, productId: product.id),
            mayPublish: principal.holds(.releasesPublish, tenantId: tenant.id, productId: product.id),
            mayWrite: principal.holds(.productsWrite, tenantId: tenant.id, productId: product.id),
            now: admin.clock.unixSeconds
        )
    }
}
