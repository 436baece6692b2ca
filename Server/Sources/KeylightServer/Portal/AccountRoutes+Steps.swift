import Foundation
import HTTPTypes
import Hummingbird
import KeylightCore
import Logging

/// The steps of the account routes: the key link, the shared request handling, the page and the actions.
extension AccountRoutes {
    /// The hosted clients' upgrade link: the key proves one license; it is traded at once for a
    /// session, and the answer is a redirect to a URL without it.
    func fromKey(_ request: Request, _ context: KeylightRequestContext) async throws -> Response {
        let tenantId = context.parameters.get("tenant") ?? ""
        guard TenantPath.isValidId(tenantId), let tenant = try await admin.tenant(id: tenantId) else { return notFound() }
        if case .limited(let retryAfter) = addressLimiter.acquire(context.rateLimitKey) {
            var response = renderer.page("account", AccountView(tenant: tenant, csrf: "", problem: "Too many requests from your address; wait a minute."), status: .tooManyRequests)
            response.headers[.retryAfter] = String(retryAfter)
            return response
        }
        let now = admin.clock.unixSeconds
        guard let key = try? LicenseKey(context.parameters.get("key") ?? ""),
              case .allowed = licenseLimiter.acquire(key.keyHash),
              let license = try await admin.license(tenantId: tenantId, keyHash: key.keyHash) else {
            return renderer.page("account", AccountView(tenant: tenant, csrf: "", problem: AccountProblem.unknownKey.message), status: .notFound)
        }
        var session = AccountSession.read(from: request, sealer: admin.sealer, tenantId: tenantId, now: now) ?? .fresh(now: now)
        (session.email, session.licenseId) = (nil, license.id)
        session.csrf = AccountController.newToken()
        session.expiresAt = now + AccountSession.lifetime
        var response = Response.redirect(to: AccountSession.path(tenantId: tenantId), type: .normal)
        response.setCookie(try session.cookie(sealer: admin.sealer, tenantId: tenantId, secure: secureCookies))
        response.headers[.cacheControl] = "no-store"
        response.headers[.init("Referrer-Policy")!] = "no-referrer"
        return response
    }

    private func notFound() -> Response {
        renderer.page("portal", PortalView(title: "Not found", productName: "Keylight", base: "", csrf: "", problem: "There is no customer portal at this address.", available: false), status: .notFound)
    }

    /// What every account request shares: the tenant (404 without one that has a portal), then for
    /// a POST the per-address limit, the bounded form and the CSRF token; failures become the page
    /// with the problem, at the error's status.
    func answer(
        _ request: Request, _ context: KeylightRequestContext, isPost: Bool = true,
        _ action: (PortalForm, Tenant, AccountSession) async throws -> (Response, AccountSession)
    ) async throws -> Response {
        let tenantId = context.parameters.get("tenant") ?? ""
        guard TenantPath.isValidId(tenantId), let tenant = try await admin.tenant(id: tenantId) else { return notFound() }
        let now = admin.clock.unixSeconds
        let existing = AccountSession.read(from: request, sealer: admin.sealer, tenantId: tenantId, now: now)
        var session = existing ?? .fresh(now: now)
        var status: HTTPResponse.Status = .ok
        var problem: String?
        var retryAfter: Int?
        do {
            var form = PortalForm()
            if isPost {
                form = try await PortalForm.readPost(
                    request, client: context.rateLimitKey, limiter: addressLimiter, accepts: existing.map { session in { session.accepts(csrf: $0) } },
                    expired: AccountProblem.expiredForm
                )
            }
            var (response, updated) = try await action(form, tenant, session)
            updated.expiresAt = now + AccountSession.lifetime
            if !isPost { updated.notice = nil }  // shown once, by this page
            response.setCookie(try updated.cookie(sealer: admin.sealer, tenantId: tenantId, secure: secureCookies))
            return response
        } catch let refusal as AccountProblem {
            status = refusal.status
            problem = refusal.message
            if refusal == .expiredForm { session = .fresh(now: now) }
        } catch let error as APIError {
            (status, problem, retryAfter) = (error.status, error.message, error.retryAfter)
        } catch {
            logger.error("account request failed", metadata: ["error": "\(type(of: error))"])
            (status, problem) = (.serviceUnavailable, "Something went wrong on our side; try again in a moment.")
        }
        var view = (try? await view(tenant, session)) ?? AccountView(tenant: tenant, csrf: session.csrf)
        view.problem = problem
        view.notice = nil
        var response = renderer.page("account", view, status: status)
        response.setCookie(try session.cookie(sealer: admin.sealer, tenantId: tenantId, secure: secureCookies))
        if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        return response
    }

    func page(_ tenant: Tenant, _ session: AccountSession) async throws -> Response {
        renderer.page("account", try await view(tenant, session))
    }

    /// The licenses the session may see: the address's, or the one its key opened.
    private func licenses(_ tenant: Tenant, _ session: AccountSession) async throws -> [License] {
        if let email = session.email { return try await admin.accountLicenses(tenantId: tenant.id, email: email) }
        if let id = session.licenseId, let license = try await admin.license(tenantId: tenant.id, id: id) { return [license] }
        return []
    }

    private func view(_ tenant: Tenant, _ session: AccountSession) async throws -> AccountView {
        var view = AccountView(tenant: tenant, csrf: session.csrf)
        view.notice = session.notice
        view.canMail = admin.mailBuyers && admin.publicURL != nil
        view.products = try await admin.products(tenantId: tenant.id).filter(\.portalEnabled)
            .map { AccountView.ProductLink(name: $0.name, url: "/portal/\(tenant.id)/\($0.id)") }
        view.hasProducts = !view.products.isEmpty
        guard session.isSignedIn else { return view }
        view.signedIn = true
        view.email = session.email
        let now = admin.clock.unixSeconds
        var products: [String: Product] = [:]
        for license in try await licenses(tenant, session) {
            if products[license.productId] == nil { products[license.productId] = try await admin.product(tenantId: tenant.id, id: license.productId) }
            guard let product = products[license.productId], product.portalEnabled else { continue }
            let keyTypes = try await admin.keyTypes(tenantId: tenant.id, productId: product.id)
            let keyType = keyTypes.first { $0.id == license.keyTypeId }
            let instances = try await admin.instances(licenseId: license.id).filter(\.active)
            let offers = license.status == .active ? try await admin.offers(of: license) : []
            var row = AccountView.LicenseRow(
                license: license, product: product, keyType: keyType, keyTypes: keyTypes, instances: instances, offers: offers,
                canBuy: admin.publicURL != nil, now: now
            )
            if license.status == .active, let releases, let build = try await releases.newestCoveredBuild(for: license) {
                row.newestBuild = AccountView.BuildRow(
                    version: build.release.shortVersion, released: DashboardFormat.day(build.release.releasedAt),
                    size: ByteCountFormatter.string(fromByteCount: build.artifact.length, countStyle: .file), url: build.url
                )
            }
            view.licenses.append(row)
        }
        return view
    }

    /// A license the session may act on, and its product.
    func owned(_ context: KeylightRequestContext, _ tenant: Tenant, _ session: AccountSession) async throws -> (License, Product) {
        guard session.isSignedIn else { throw AccountProblem.signedOut }
        let id = context.parameters.get("id") ?? ""
        guard let license = try await licenses(tenant, session).first(where: { $0.id == id }),
              let product = try await admin.product(tenantId: tenant.id, id: license.productId), product.portalEnabled else { throw AccountProblem.notYours }
        if case .limited(let retryAfter) = licenseLimiter.acquire(license.keyHash) { throw APIError.rateLimited(retryAfter: retryAfter) }
        return (license, product)
    }

    func requestLink(_ form: PortalForm, _ tenant: Tenant, _ session: AccountSession, client: IPAddress) async throws -> (Response, AccountSession) {
        guard admin.mailBuyers, admin.publicURL != nil else { throw AccountProblem.noMail }
        if case .limited(let retryAfter) = lostKeyLimits.perClient.acquire(client) { throw APIError.rateLimited(retryAfter: retryAfter) }
        let email: String
        do {
            guard let parsed = try Field.email(form["email"]?.trimmingCharacters(in: .whitespaces)) else { throw AccountProblem.badEmail }
            email = parsed
            _ = try MailAddress(email)
        } catch {
            throw AccountProblem.badEmail
        }
        if case .limited(let retryAfter) = lostKeyLimits.perRecipient.acquire(email) { throw APIError.rateLimited(retryAfter: retryAfter) }
        try await admin.requestSignInLink(tenantId: tenant.id, email: email)
        var session = session
        session.notice = "If any license was bought with \(email), a sign-in link is on its way there now. It works once, for 15 minutes."
        return (.redirect(to: AccountSession.path(tenantId: tenant.id), type: .normal), session)
    }

    /// Starts a Stripe Checkout for an offer of the license's key type, and sends the buyer there.
    func buy(_ form: PortalForm, _ context: KeylightRequestContext, _ tenant: Tenant, _ session: AccountSession) async throws -> (Response, AccountSession) {
        let (license, _) = try await owned(context, tenant, session)
        guard let publicURL = admin.publicURL else { throw AccountProblem.noCheckout }
        let back = publicURL + AccountSession.path(tenantId: tenant.id)
        var request = CheckoutRequest(product_id: license.productId, success_url: back + "?paid=1", cancel_url: back)
        request.customer_email = license.customerEmail
        let choice = form["offer"] ?? ""
        if choice == "renewal" {
            request.renew = license.id
        } else if choice == "seats" {
            request.seats = license.id
            request.quantity = try DashboardForm.wholeNumber(form["quantity"].flatMap { $0.isEmpty ? nil : $0 }, label: "Devices") ?? 1
        } else if choice.hasPrefix("upgrade:") {
            request.upgrade_from = license.id
            request.key_type_id = String(choice.dropFirst("upgrade:".count))
        } else {
            throw APIError.invalidRequest("Choose what to buy.")
        }
        let stripeSession = try await checkout.createSession(tenantId: tenant.id, request, idempotencyKey: nil)
        return (.redirect(to: stripeSession.url, type: .normal), session)
    }
}
