import Foundation
import HTTPTypes
import Hummingbird
import KeylightCore
import Logging

/// The buyer's account in the portal (issue 49), at `/portal/<tenant>/account`: every license of
/// an address in the tenant, with its devices, dates, an offline file, and upgrade, renewal and
/// seat buttons with their prices. The buyer signs in with a link mailed to the address (15
/// minutes, once, limited like "Lost your key?", and answered the same whether or not the address
/// bought anything), or arrives from an app with one license's key through
/// `/t/<tenant>/license/<KEY>/upgrade`, which the hosted clients build themselves: that page trades
/// the key at once for a sealed session and redirects to a URL without it. The request log names
/// routes, never paths, so the key is not logged.
struct AccountRoutes: Sendable {
    let licensing: LicensingService
    let admin: AdminService
    let checkout: CheckoutService
    let renderer: DashboardRenderer
    let secureCookies: Bool
    let addressLimiter: RateLimiter<IPAddress>
    let licenseLimiter: RateLimiter<String>
    let lostKeyLimits: LostKeyLimits
    let logger: Logger
    /// The newest build each license covers (issue 51); nil in routers built without releases.
    var releases: ReleaseService? = nil

    init(
        licensing: LicensingService, admin: AdminService, checkout: CheckoutService, renderer: DashboardRenderer, secureCookies: Bool,
        limits: ServerLimits, lostKeyLimits: LostKeyLimits, logger: Logger
    ) {
        self.licensing = licensing
        self.admin = admin
        self.checkout = checkout
        self.renderer = renderer
        self.secureCookies = secureCookies
        addressLimiter = RateLimiter(limit: limits.portalPerAddress, clock: admin.clock)
        licenseLimiter = RateLimiter(limit: limits.portalPerLicense, clock: admin.clock)
        self.lostKeyLimits = lostKeyLimits
        self.logger = logger
    }

    func register(on router: some RouterMethods<KeylightRequestContext>) {
        router.get("/t/:tenant/license/:key/upgrade") { request, context in
            try await fromKey(request, context)
        }
        let account = router.group("/portal/:tenant/account")
        account.get { request, context in
            try await answer(request, context, isPost: false) { _, tenant, session in
                var shown = session
                // Back from Stripe Checkout: the payment's webhook applies the change, usually within seconds.
                if request.uri.queryParameters.get("paid") == "1", session.isSignedIn {
                    shown.notice = "Thank you. Your purchase applies to your license as soon as the payment arrives, usually within a minute."
                }
                return (try await page(tenant, shown), session)
            }
        }
        account.post("/request-link") { request, context in
            try await answer(request, context) { form, tenant, session in
                try await requestLink(form, tenant, session, client: context.rateLimitKey)
            }
        }
        account.get("/sign-in") { request, context in
            // A mail scanner may open the link: the GET only shows a button; the POST uses it.
            try await answer(request, context, isPost: false) { _, tenant, session in
                let token = request.uri.queryParameters.get("token") ?? ""
                var view = AccountView(tenant: tenant, csrf: session.csrf)
                view.signInToken = AccountSignIn.isWellFormed(token) ? token : nil
                if view.signInToken == nil { view.problem = AccountProblem.badLink.message }
                return (renderer.page("account", view, status: view.signInToken == nil ? .forbidden : .ok), session)
            }
        }
        account.post("/sign-in") { request, context in
            try await answer(request, context) { form, tenant, session in
                guard let email = try await admin.useSignInLink(tenantId: tenant.id, token: form["token"] ?? "") else { throw AccountProblem.badLink }
                var session = session
                (session.email, session.licenseId) = (email, nil)
                session.csrf = AccountController.newToken()
                return (.redirect(to: AccountSession.path(tenantId: tenant.id), type: .normal), session)
            }
        }
        account.post("/sign-out") { request, context in
            try await answer(request, context) { _, tenant, _ in
                (.redirect(to: AccountSession.path(tenantId: tenant.id), type: .normal), .fresh(now: admin.clock.unixSeconds))
            }
        }
        account.post("/licenses/:id/devices/:instance/deactivate") { request, context in
            try await answer(request, context) { _, tenant, session in
                let (license, product) = try await owned(context, tenant, session)
                let instanceId = try Field.identifier(context.parameters.get("instance"), "instance")
                switch try await licensing.releaseSeat(keyHash: license.keyHash, instanceId: instanceId, product: product, change: InstanceChange(actor: .customer, how: .portal)) {
                case .licenseNotFound: throw AccountProblem.notYours
                case .instanceNotFound: throw APIError.notFound("Device")
                case .invalidProof: throw APIError.offlineDeviceNeedsProof
                case .deactivated, .alreadyInactive: break
                }
                var session = session
                session.notice = "The device was freed. Its slot can be used by another device now."
                return (.redirect(to: AccountSession.path(tenantId: tenant.id), type: .normal), session)
            }
        }
        account.post("/licenses/:id/offline") { request, context in
            try await answer(request, context) { form, tenant, session in
                let (license, product) = try await owned(context, tenant, session)
                let text = try PortalRoutes.file(form, text: "request", file: "request_file", what: "an activation request")
                let response = try await licensing.offlineResponse(
                    keyHash: license.keyHash, requestText: text, product: product, change: InstanceChange(actor: .offline, how: .offlineRequest)
                )
                return (renderer.download(response), session)
            }
        }
        account.post("/licenses/:id/buy") { request, context in
            try await answer(request, context) { form, tenant, session in
                try await buy(form, context, tenant, session)
            }
        }
    }

    // MARK: Steps

    /// The hosted clients' upgrade link: the key proves one license; it is traded at once for a
    /// session, and the answer is a redirect to a URL without it.
    private func fromKey(_ request: Request, _ context: KeylightRequestContext) async throws -> Response {
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
    private func answer(
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

    private func page(_ tenant: Tenant, _ session: AccountSession) async throws -> Response {
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
    private func owned(_ context: KeylightRequestContext, _ tenant: Tenant, _ session: AccountSession) async throws -> (License, Product) {
        guard session.isSignedIn else { throw AccountProblem.signedOut }
        let id = context.parameters.get("id") ?? ""
        guard let license = try await licenses(tenant, session).first(where: { $0.id == id }),
              let product = try await admin.product(tenantId: tenant.id, id: license.productId), product.portalEnabled else { throw AccountProblem.notYours }
        if case .limited(let retryAfter) = licenseLimiter.acquire(license.keyHash) { throw APIError.rateLimited(retryAfter: retryAfter) }
        return (license, product)
    }

    private func requestLink(_ form: PortalForm, _ tenant: Tenant, _ session: AccountSession, client: IPAddress) async throws -> (Response, AccountSession) {
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
    private func buy(_ form: PortalForm, _ context: KeylightRequestContext, _ tenant: Tenant, _ session: AccountSession) async throws -> (Response, AccountSession) {
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

/// The account pages' own refusals, shown on the page.
enum AccountProblem: Error, Equatable {
    case expiredForm, badLink, signedOut, notYours, unknownKey, badEmail, noMail, noCheckout

    var status: HTTPResponse.Status {
        switch self {
        case .badEmail: .badRequest
        case .noMail, .noCheckout: .serviceUnavailable
        case .expiredForm, .badLink, .signedOut: .forbidden
        case .notYours, .unknownKey: .notFound
        }
    }

    var message: String {
        switch self {
        case .expiredForm: "The form expired. Try again on this page."
        case .badLink: "This sign-in link has expired or was used already. Ask for a new one below."
        case .signedOut: "Sign in first."
        case .notYours: "That license is not one of yours."
        case .unknownKey: "No license has that key here. Open your account with the link we mail you instead."
        case .badEmail: "Enter the email address you bought with, like name@example.com."
        case .noMail: "This shop does not send mail from here. Contact the seller."
        case .noCheckout: "This shop does not sell upgrades from here. Contact the seller."
        }
    }
}
