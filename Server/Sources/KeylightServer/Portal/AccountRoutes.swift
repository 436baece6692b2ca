import HTTPTypes
import Hummingbird
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
