import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdAuth
import KeylightCore
import KeylightTrust
import Logging
import NIOCore

/// `/dashboard`: server-rendered pages over the same services as the admin API. Every change
/// goes through ``AdminService`` (and so into the audit log) as `user:<email>`.
struct DashboardRoutes: Sendable {
    let admin: AdminService
    let accounts: DashboardAccounts
    let renderer: DashboardRenderer
    let sessions: SQLSessionStore
    /// Sign-in attempts per client address.
    let loginLimiter: RateLimiter<IPAddress>
    /// The server's public URL (for the Swift snippet); nil = from the request's Host.
    let publicURL: String?
    /// Cookies carry `Secure` (the dashboard is served over TLS).
    let secureCookies: Bool
    let logger: Logger
    /// Draws license keys as QR codes; made once, used for every page.
    let qr = QRRenderer(quietZone: 4, darkColor: "#111827")
    static let sessionLifetime: Duration = .seconds(8 * 3_600)
    static let maxFormBytes = 64 * 1024

    /// Who is signed in, for one request.
    struct SignedIn: Sendable {
        var email: String
        var csrf: String
        var actor: AuditActor { AuditActor("user:\(email)") }
    }

    func register(on router: some RouterMethods<KeylightRequestContext>) {
        router.get("/dashboard/static/dashboard.css") { _, _ in renderer.asset(renderer.stylesheet, contentType: "text/css; charset=utf-8") }
        router.get("/dashboard/static/dashboard.js") { _, _ in renderer.asset(renderer.script, contentType: "text/javascript; charset=utf-8") }
        let dash = router.group("/dashboard", context: DashboardContext.self).add(middleware: SessionMiddleware(
            storage: sessions,
            configuration: .init(
                sessionCookieParameters: .init(name: "keylight_session", path: "/dashboard", secure: secureCookies, sameSite: .lax),
                keyPrefix: "", defaultSessionExpiration: Self.sessionLifetime
            )
        ))
        registerSignIn(on: dash)
        registerTenants(on: dash)
        registerProducts(on: dash)
        registerLicenses(on: dash)
        registerOperations(on: dash)
    }

    // MARK: Sign-in

    private func registerSignIn(on dash: RouterGroup<DashboardContext>) {
        dash.get("/login") { request, context -> Response in
            if context.signedIn != nil { return .redirect(to: "/dashboard") }
            // The sign-in form's CSRF token is a double-submit cookie, not a session: an anonymous
            // page view writes nothing to the database.
            let token = Self.newToken()
            let form = DashboardSession(userId: nil, email: nil, csrf: token)
            var response = renderer.page("login", LoginView(chrome: chrome("Sign in", context, session: form), email: nil, next: Self.safeNext(request.uri.queryParameters.get("next"))))
            response.setCookie(Cookie(
                name: Self.loginCookie, value: token, maxAge: 3_600, path: "/dashboard/login", secure: secureCookies, httpOnly: true, sameSite: .strict
            ))
            return response
        }
        dash.post("/login") { request, context -> Response in
            let token = request.cookies[Self.loginCookie]?.value ?? ""
            let session = DashboardSession(userId: nil, email: nil, csrf: token)
            if case .limited = loginLimiter.acquire(context.rateLimitKey) {
                return errorPage(context, status: .tooManyRequests, "Too many sign-in attempts from your address; wait a minute.", back: "/dashboard/login")
            }
            guard !token.isEmpty, let form = await readForm(request), Self.csrfMatches(form, token) else {
                return errorPage(context, status: .forbidden, "The sign-in form expired. Reload the page and try again.", back: "/dashboard/login")
            }
            let next = Self.safeNext(form["next"])
            let email = form["email"] ?? ""
            let result: DashboardAccounts.SignIn
            do {
                result = try await accounts.signIn(email: email, password: form.pairs.first { $0.0 == "password" }?.1 ?? "")
            } catch is PasswordHasher.Busy {
                var response = errorPage(context, status: .tooManyRequests, "The server is busy checking other sign-ins; try again in a few seconds.", back: "/dashboard/login")
                response.headers[.retryAfter] = "5"
                return response
            } catch {
                return errorPage(context, status: .serviceUnavailable, "The database is unavailable; try again shortly.", back: "/dashboard/login")
            }
            switch result {
            case .success(let user):
                // A new session id at sign-in: a session planted before sign-in is worth nothing after it.
                context.sessions.createSession(
                    DashboardSession(userId: user.id, email: user.email, csrf: Self.newToken(), credential: DashboardAccounts.credentialStamp(user)),
                    expiresIn: Self.sessionLifetime
                )
                var response = Response.redirect(to: next)
                response.setCookie(Cookie(name: Self.loginCookie, value: "", maxAge: 0, path: "/dashboard/login", secure: secureCookies, httpOnly: true, sameSite: .strict))
                return response
            case .wrongCredentials:
                var view = LoginView(chrome: chrome("Sign in", context, session: session), email: email, next: next)
                view.chrome.error = "Wrong email or password. After 5 failed attempts an account is locked for 15 minutes."
                return renderer.page("login", view, status: .unauthorized)
            }
        }
        dash.post("/logout") { request, context -> Response in
            await guarded(request, context, post: true, back: "/dashboard") { _, _ in
                context.sessions.clearSession()
                return .redirect(to: "/dashboard/login")
            }
        }
    }

    // MARK: Tenants

    private func registerTenants(on dash: RouterGroup<DashboardContext>) {
        dash.get { request, context -> Response in
            await guarded(request, context, back: "/dashboard") { _, user in
                let now = admin.clock.unixSeconds
                var cards: [TenantCard] = []
                for tenant in try await admin.database.tenants() {
                    var products: [ProductCard] = []
                    for product in try await admin.database.products(tenantId: tenant.id) {
                        let charts = try await charts(tenantId: tenant.id, productId: product.id, now: now)
                        products.append(ProductCard(
                            tenantId: tenant.id, id: product.id, name: product.name, keyPrefix: product.keyPrefix,
                            statusChart: charts.status, activationChart: charts.activations, validationChart: charts.validations, total: charts.total
                        ))
                    }
                    cards.append(TenantCard(id: tenant.id, name: tenant.name, products: products))
                }
                return renderer.page("home", HomeView(chrome: chrome("Overview", context, user: user), tenants: cards))
            }
        }
        dash.post("/tenants") { request, context -> Response in
            await guarded(request, context, post: true, back: "/dashboard") { form, user in
                let tenant = try await admin.createTenant(CreateTenantRequest(id: form["id"], name: form["name"]), actor: user.actor)
                flash(context, "Tenant \(tenant.name) created.")
                return .redirect(to: "/dashboard/t/\(tenant.id)")
            }
        }
        dash.get("/t/:tenant") { request, context -> Response in
            await guarded(request, context, back: "/dashboard") { _, user in
                renderer.page("tenant", try await tenantView(try context.parameters.require("tenant"), context, user))
            }
        }
        dash.post("/t/:tenant/stripe") { request, context -> Response in
            let tenant = context.parameters.get("tenant") ?? ""
            return await guarded(request, context, post: true, back: "/dashboard/t/\(tenant)") { form, user in
                // Blank fields keep what is stored; only the box removes the secret key.
                let secretKey: String?? = form["remove_secret_key"] == "on" ? .some(nil) : form["secret_key"].map { .some($0) } ?? .none
                try await admin.setStripe(tenantId: tenant, StripeSettingsRequest(webhookSecret: form["webhook_secret"], secretKey: secretKey), actor: user.actor)
                flash(context, "Stripe settings saved.")
                return .redirect(to: "/dashboard/t/\(tenant)")
            }
        }
        dash.post("/t/:tenant/checkout-key") { request, context -> Response in
            let tenant = context.parameters.get("tenant") ?? ""
            return await guarded(request, context, post: true, back: "/dashboard/t/\(tenant)") { _, user in
                let key = try await admin.rotateCheckoutKey(tenantId: tenant, actor: user.actor)
                var view = try await tenantView(tenant, context, user)
                view.newCheckoutKey = key
                return renderer.page("tenant", view)
            }
        }
        dash.post("/t/:tenant/webhooks") { request, context -> Response in
            let tenant = context.parameters.get("tenant") ?? ""
            return await guarded(request, context, post: true, back: "/dashboard/t/\(tenant)") { form, user in
                let events = form.all("events")
                let (_, secret) = try await admin.createWebhookEndpoint(
                    tenantId: tenant, CreateWebhookEndpointRequest(url: form["url"], events: events.isEmpty ? nil : events), actor: user.actor
                )
                var view = try await tenantView(tenant, context, user)
                view.newEndpointSecret = secret
                return renderer.page("tenant", view)
            }
        }
        dash.post("/t/:tenant/webhooks/:endpoint/deliveries/:delivery/redeliver") { request, context -> Response in
            let tenant = context.parameters.get("tenant") ?? ""
            return await guarded(request, context, post: true, back: "/dashboard/t/\(tenant)") { _, user in
                let delivery = try await admin.redeliver(
                    tenantId: tenant, endpointId: try context.parameters.require("endpoint"),
                    deliveryId: try context.parameters.require("delivery"), actor: user.actor
                )
                flash(context, "Delivery \(delivery.id) scheduled.")
                return .redirect(to: "/dashboard/t/\(tenant)")
            }
        }
        dash.post("/t/:tenant/stripe/events/:event/retry") { request, context -> Response in
            let tenant = context.parameters.get("tenant") ?? ""
            return await guarded(request, context, post: true, back: "/dashboard/t/\(tenant)") { _, user in
                let outcome = try await admin.retryStripeEvent(tenantId: tenant, id: try context.parameters.require("event"), actor: user.actor)
                if outcome == .unknownProduct {
                    flash(context, error: "The event still names a product or key type this tenant does not have.")
                } else {
                    flash(context, "Stripe event applied: \(outcome.rawValue).")
                }
                return .redirect(to: "/dashboard/t/\(tenant)")
            }
        }
        dash.post("/t/:tenant/webhooks/:endpoint/:action") { request, context -> Response in
            let tenant = context.parameters.get("tenant") ?? ""
            return await guarded(request, context, post: true, back: "/dashboard/t/\(tenant)") { _, user in
                let endpoint = try context.parameters.require("endpoint")
                switch try context.parameters.require("action") {
                case "enable", "disable":
                    let enabled = context.parameters.get("action") == "enable"
                    _ = try await admin.setWebhookEndpointEnabled(tenantId: tenant, id: endpoint, UpdateWebhookEndpointRequest(enabled: enabled), actor: user.actor)
                    flash(context, enabled ? "Endpoint enabled." : "Endpoint disabled; its pending deliveries were stopped.")
                case "delete":
                    try await admin.deleteWebhookEndpoint(tenantId: tenant, id: endpoint, actor: user.actor)
                    flash(context, "Endpoint deleted.")
                default:
                    throw APIError.notFound("Action")
                }
                return .redirect(to: "/dashboard/t/\(tenant)")
            }
        }
    }

    private func tenantView(_ tenantId: String, _ context: DashboardContext, _ user: SignedIn) async throws -> TenantView {
        let tenant = try await admin.requireTenant(tenantId)
        let stripe = try await admin.database.stripeSettings(tenantId: tenant.id)
        let endpoints = try await admin.database.webhookEndpoints(tenantId: tenant.id)
        let urls = Dictionary(endpoints.map { ($0.id, $0.url) }, uniquingKeysWith: { first, _ in first })
        let deliveries = try await admin.database.webhookDeliveries(tenantId: tenant.id, limit: 20)
        let unapplied = try await admin.database.stripeEvents(tenantId: tenant.id, outcome: StripeOutcome.unknownProduct.rawValue, limit: 20)
        return TenantView(
            chrome: chrome(tenant.name, context, user: user),
            tenant: tenant,
            products: try await admin.database.products(tenantId: tenant.id).map(ProductRow.init),
            stripeConfigured: stripe != nil, stripeSecretKeySet: stripe?.sealedSecretKey != nil,
            checkoutKeySet: try await admin.database.checkoutKeyHash(tenantId: tenant.id) != nil,
            newCheckoutKey: nil, newEndpointSecret: nil,
            endpoints: endpoints.map {
                EndpointRow(id: $0.id, url: $0.url, events: $0.eventTypes.map(\.rawValue).joined(separator: ", "), enabled: $0.enabled,
                            disabledReason: $0.disabledReason, created: DashboardFormat.time($0.createdAt))
            },
            deliveries: deliveries.map {
                DeliveryRow(id: $0.id, endpointId: $0.endpointId, canRedeliver: $0.status != .pending && $0.sealedPayload != nil,
                            eventType: $0.eventType, eventId: $0.eventId, endpointURL: urls[$0.endpointId] ?? $0.endpointId, status: $0.status.rawValue,
                            attempts: $0.attempts, lastStatus: $0.lastStatusCode.map(String.init) ?? "—", lastError: $0.lastError,
                            created: DashboardFormat.time($0.createdAt), next: $0.status == .pending ? DashboardFormat.time($0.nextAttemptAt) : nil)
            },
            eventTypes: WebhookEventType.allCases.map { EventTypeOption(name: $0.rawValue) },
            unappliedStripeEvents: unapplied.map {
                StripeEventRow(id: $0.id, type: $0.type, attempts: $0.attempts, received: DashboardFormat.time($0.receivedAt), retryable: $0.retryable)
            },
            hasUnappliedStripeEvents: !unapplied.isEmpty
        )
    }

    // MARK: Products and key types

    private func registerProducts(on dash: RouterGroup<DashboardContext>) {
        dash.post("/t/:tenant/products") { request, context -> Response in
            let tenant = context.parameters.get("tenant") ?? ""
            return await guarded(request, context, post: true, back: "/dashboard/t/\(tenant)") { form, user in
                let (product, sdkKey) = try await admin.createProduct(tenantId: tenant, CreateProductRequest(
                    id: form["id"], name: form["name"], key_prefix: form["key_prefix"]?.uppercased(),
                    trial_duration_days: try form.int("trial_duration_days", label: "Trial days"), free_tier_enabled: form.flag("free_tier_enabled")
                ), actor: user.actor)
                var view = try await productView(tenant, product.id, request, context, user)
                view.sdkKey = sdkKey
                view.snippet = snippet(product: product, sdkKey: sdkKey, request: request)
                return renderer.page("product", view)
            }
        }
        dash.get("/t/:tenant/p/:product") { request, context -> Response in
            await guarded(request, context, back: "/dashboard") { _, user in
                renderer.page("product", try await productView(try context.parameters.require("tenant"), try context.parameters.require("product"), request, context, user))
            }
        }
        dash.post("/t/:tenant/p/:product") { request, context -> Response in
            let (tenant, product) = (context.parameters.get("tenant") ?? "", context.parameters.get("product") ?? "")
            return await guarded(request, context, post: true, back: "/dashboard/t/\(tenant)/p/\(product)") { form, user in
                _ = try await admin.requireProduct(tenantId: tenant, productId: product)
                _ = try await admin.updateProduct(tenantId: tenant, productId: product, UpdateProductRequest(
                    name: form["name"], trial_duration_days: try form.int("trial_duration_days", label: "Trial days"), free_tier_enabled: form.flag("free_tier_enabled")
                ), actor: user.actor)
                flash(context, "Product saved.")
                return .redirect(to: "/dashboard/t/\(tenant)/p/\(product)")
            }
        }
        dash.post("/t/:tenant/p/:product/key-types") { request, context -> Response in
            let (tenant, product) = (context.parameters.get("tenant") ?? "", context.parameters.get("product") ?? "")
            return await guarded(request, context, post: true, back: "/dashboard/t/\(tenant)/p/\(product)") { form, user in
                let entitlements = (form["entitlements"] ?? "").split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
                // Range-checked before the multiplication: a form value near Int.max must be a 400, not a trap.
                let ttlDays = try form.int("lease_ttl_days", label: "Lease TTL").map { days throws(APIError) in try Field.integer(days, "lease_ttl_days", in: 1...366) }
                let keyType = try await admin.createKeyType(tenantId: tenant, productId: product, CreateKeyTypeRequest(
                    id: form["id"], display_name: form["display_name"], activation_limit: try form.int("activation_limit", label: "Activation limit"),
                    duration_days: try form.int("duration_days", label: "Duration"), fallback_access: form.flag("fallback_access"),
                    lease_ttl_seconds: ttlDays.map { Int64($0) * 86_400 }, entitlements: entitlements,
                    stripe_price_id: form["stripe_price_id"], stripe_mode: form["stripe_mode"]
                ), actor: user.actor)
                flash(context, "Key type \(keyType.displayName) created.")
                return .redirect(to: "/dashboard/t/\(tenant)/p/\(product)")
            }
        }
        dash.post("/t/:tenant/p/:product/key-types/:keyType/stripe") { request, context -> Response in
            let (tenant, product) = (context.parameters.get("tenant") ?? "", context.parameters.get("product") ?? "")
            return await guarded(request, context, post: true, back: "/dashboard/t/\(tenant)/p/\(product)") { form, user in
                _ = try await admin.updateKeyType(
                    tenantId: tenant, productId: product, id: try context.parameters.require("keyType"),
                    UpdateKeyTypeRequest(stripePriceId: .some(form["stripe_price_id"]), stripeMode: form["stripe_mode"]), actor: user.actor
                )
                flash(context, "Stripe price saved.")
                return .redirect(to: "/dashboard/t/\(tenant)/p/\(product)")
            }
        }
    }

    private func productView(_ tenantId: String, _ productId: String, _ request: Request, _ context: DashboardContext, _ user: SignedIn) async throws -> ProductView {
        let tenant = try await admin.requireTenant(tenantId)
        let product = try await admin.requireProduct(tenantId: tenantId, productId: productId)
        let charts = try await charts(tenantId: tenantId, productId: productId, now: admin.clock.unixSeconds)
        return ProductView(
            chrome: chrome(product.name, context, user: user), tenantId: tenant.id, tenantName: tenant.name, product: ProductRow(product),
            sdkKey: nil, snippet: snippet(product: product, sdkKey: nil, request: request),
            keyTypes: try await admin.database.keyTypes(tenantId: tenantId, productId: productId).map(KeyTypeRow.init),
            statusChart: charts.status, activationChart: charts.activations, validationChart: charts.validations
        )
    }

    /// The `Configuration` an app embeds, with every key the keyset currently trusts.
    private func snippet(product: Product, sdkKey: String?, request: Request) -> String {
        let server = publicURL ?? "http://\(request.head.authority ?? "localhost:8080")"
        let keys = Self.trustedKeysLines(admin.keyRing.current[product.tenantId])
        return """
            import Keylight

            let configuration = Configuration(
                serverURL: URL(string: "\(server)")!,
                tenantId: "\(product.tenantId)", productId: "\(product.id)",
                sdkKey: "\(sdkKey ?? "kl_sdk_… (shown once when the product was created)")",
                keyPrefix: "\(product.keyPrefix)",
                trustedKeys: [
            \(keys)
                ],
                trialDaysSeed: \(product.trialDurationDays)
            )
            let manager = LicenseManager(configuration: configuration)
            """
    }

    /// The `trustedKeys` entries an app build ships: every published key of the tenant, the
    /// prepared `next` one included, so the build keeps working after the next rotation.
    static func trustedKeysLines(_ keys: KeyRing.TenantKeys?) -> String {
        (keys?.rows ?? []).filter { $0.status != .retired }.map {
            let note = switch $0.status {
            case .next: "  // next: signs after the next rotation"
            case .grace: "  // grace: signed before the last rotation"
            default: ""
            }
            return "        \"\($0.kid)\": try .init(rawRepresentation: Data(base64Encoded: \"\($0.publicKey)\")!),\(note)"
        }.joined(separator: "\n")
    }

    private func charts(tenantId: String, productId: String, now: Int64) async throws -> (status: String, activations: String, validations: String, total: Int) {
        let counts = try await admin.database.licenseStatusCounts(tenantId: tenantId, productId: productId, now: now)
        let usage = try await admin.database.usage(tenantId: tenantId, productId: productId, lastDay: now.flooringDivided(by: 86_400), days: 30)
        let labels = usage.map { DashboardFormat.shortDay($0.day) }
        return (
            SVGChart.statuses(counts),
            SVGChart.bars(title: "Activations per day", values: usage.map(\.count.activations), labels: labels, cssClass: "activations"),
            SVGChart.bars(title: "Validations per day", values: usage.map(\.count.validations), labels: labels, cssClass: "validations"),
            counts.total
        )
    }

    // MARK: Licenses

    private func registerLicenses(on dash: RouterGroup<DashboardContext>) {
        dash.get("/t/:tenant/p/:product/licenses") { request, context -> Response in
            await guarded(request, context, back: "/dashboard") { _, user in
                let (tenant, productId) = (try context.parameters.require("tenant"), try context.parameters.require("product"))
                let product = try await admin.requireProduct(tenantId: tenant, productId: productId)
                let query = request.uri.queryParameters
                let email = query.get("email").flatMap { $0.isEmpty ? nil : $0 }
                let suffix = query.get("key_suffix").flatMap { $0.isEmpty ? nil : $0 }
                let status = query.get("status").flatMap { $0.isEmpty ? nil : $0 }
                let (licenses, next) = try await admin.licensePage(tenantId: tenant, productId: productId, try LicenseQuery(reading: { query.get($0) }, fixedLimit: 50))
                let now = admin.clock.unixSeconds
                let base = "/dashboard/t/\(tenant)/p/\(productId)/licenses"
                let filters = [("email", email), ("key_suffix", suffix), ("status", status)].compactMap { name, value in value.map { (name, $0) } }
                return renderer.page("licenses", LicensesView(
                    chrome: chrome("Licenses · \(product.name)", context, user: user), tenantId: tenant, productId: productId, productName: product.name,
                    email: email, keySuffix: suffix,
                    statuses: [("", "any status")] .map { StatusOption(value: $0.0, label: $0.1, selected: status == nil) }
                        + LicenseStatus.allCases.map { StatusOption(value: $0.rawValue, label: $0.rawValue, selected: status == $0.rawValue) },
                    licenses: licenses.map { LicenseRow($0, now: now) },
                    nextURL: next.map { base + "?" + FormEncoding.encode(filters + [("cursor", $0)]) },
                    csvURL: base + ".csv" + (filters.isEmpty ? "" : "?" + FormEncoding.encode(filters)),
                    keyTypes: try await admin.database.keyTypes(tenantId: tenant, productId: productId).map { KeyTypeOption(id: $0.id, label: $0.displayName) }
                ))
            }
        }
        dash.get("/t/:tenant/p/:product/licenses.csv") { request, context -> Response in
            await guarded(request, context, back: "/dashboard") { _, _ in
                try await csv(request, tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"))
            }
        }
        dash.post("/t/:tenant/p/:product/licenses") { request, context -> Response in
            let (tenant, product) = (context.parameters.get("tenant") ?? "", context.parameters.get("product") ?? "")
            return await guarded(request, context, post: true, back: "/dashboard/t/\(tenant)/p/\(product)/licenses") { form, user in
                let (license, key) = try await admin.createLicense(tenantId: tenant, productId: product, CreateLicenseRequest(
                    key_type_id: form["key_type_id"], customer_email: form["customer_email"], expires_at: nil
                ), actor: user.actor)
                return renderer.page("license", try await licenseView(tenant, product, license.id, context, user, newKey: key.text))
            }
        }
        dash.get("/t/:tenant/p/:product/licenses/:id") { request, context -> Response in
            await guarded(request, context, back: "/dashboard") { _, user in
                renderer.page("license", try await licenseView(
                    try context.parameters.require("tenant"), try context.parameters.require("product"), try context.parameters.require("id"), context, user, newKey: nil
                ))
            }
        }
        dash.post("/t/:tenant/p/:product/licenses/:id/:action") { request, context -> Response in
            let (tenant, product, id) = (context.parameters.get("tenant") ?? "", context.parameters.get("product") ?? "", context.parameters.get("id") ?? "")
            let page = "/dashboard/t/\(tenant)/p/\(product)/licenses/\(id)"
            return await guarded(request, context, post: true, back: page) { _, user in
                let action = try context.parameters.require("action")
                let statuses: [String: LicenseStatus] = ["revoke": .revoked, "suspend": .suspended, "reinstate": .active]
                if let status = statuses[action] {
                    _ = try await admin.setStatus(tenantId: tenant, productId: product, id: id, to: status, action: "license.\(action)", actor: user.actor)
                    flash(context, "License \(status == .active ? "reinstated" : status.rawValue).")
                    return .redirect(to: page)
                }
                guard action == "remint" else { throw APIError.notFound("Action") }
                let (_, key) = try await admin.remint(tenantId: tenant, productId: product, id: id, actor: user.actor)
                var view = try await licenseView(tenant, product, id, context, user, newKey: key.text)
                view.chrome.flash = "New key minted; the old key no longer works."
                return renderer.page("license", view)
            }
        }
        dash.post("/t/:tenant/p/:product/licenses/:id/instances/:instance/deactivate") { request, context -> Response in
            let (tenant, product, id) = (context.parameters.get("tenant") ?? "", context.parameters.get("product") ?? "", context.parameters.get("id") ?? "")
            let page = "/dashboard/t/\(tenant)/p/\(product)/licenses/\(id)"
            return await guarded(request, context, post: true, back: page) { _, user in
                try await admin.deactivateInstance(tenantId: tenant, productId: product, licenseId: id, instanceId: try context.parameters.require("instance"), actor: user.actor)
                flash(context, "Device deactivated; its slot is free.")
                return .redirect(to: page)
            }
        }
    }

    private func licenseView(_ tenantId: String, _ productId: String, _ id: String, _ context: DashboardContext, _ user: SignedIn, newKey: String?) async throws -> LicenseView {
        let product = try await admin.requireProduct(tenantId: tenantId, productId: productId)
        let license = try await admin.license(tenantId: tenantId, productId: productId, id: id)
        let instances = try await admin.database.instances(licenseId: license.id)
        return LicenseView(
            chrome: chrome("License …\(license.maskedKey.suffix(4))", context, user: user), tenantId: tenantId, productId: productId, productName: product.name,
            license: LicenseRow(license, now: admin.clock.unixSeconds),
            instances: instances.map {
                InstanceRow(id: $0.id, name: $0.name, active: $0.active, activated: DashboardFormat.time($0.activatedAt),
                            lastSeen: DashboardFormat.time($0.lastValidatedAt), deactivated: $0.deactivatedAt.map(DashboardFormat.time))
            },
            newKey: newKey, newKeyQR: try newKey.map { qr.svg(try QRCode(text: $0, errorCorrection: .medium)) }, canRevoke: license.status != .revoked, canSuspend: license.status == .active, canReinstate: license.status != .active
        )
    }

    /// Every license matching the list's filters, as CSV (keys masked).
    private func csv(_ request: Request, tenantId: String, productId: String) async throws -> Response {
        let query = request.uri.queryParameters
        let now = admin.clock.unixSeconds
        var text = DashboardFormat.csvLine(["id", "masked_key", "status", "expired", "customer_email", "key_type_id", "expires_at", "active_instances", "created_at"])
        var cursor: String?
        repeat {
            var pageQuery = try LicenseQuery(reading: { query.get($0) }, fixedLimit: 500)
            pageQuery.afterId = try cursor.map(LicenseQuery.afterId(cursor:))
            let (page, next) = try await admin.licensePage(tenantId: tenantId, productId: productId, pageQuery)
            for license in page {
                text += DashboardFormat.csvLine([
                    license.id, license.maskedKey, license.status.rawValue, (license.expiresAt.map { $0 <= now } ?? false) ? "true" : "false",
                    license.customerEmail ?? "", license.keyTypeId, DashboardFormat.iso(license.expiresAt), String(license.activeInstances),
                    DashboardFormat.iso(license.createdAt),
                ])
            }
            cursor = next
        } while cursor != nil
        var headers = DashboardRenderer.securityHeaders
        headers[.contentType] = "text/csv; charset=utf-8"
        headers[.contentDisposition] = "attachment; filename=\"\(tenantId)-\(productId)-licenses.csv\""
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    // MARK: Signing keys and audit log

    private func registerOperations(on dash: RouterGroup<DashboardContext>) {
        dash.get("/signing-keys") { request, context -> Response in
            await guarded(request, context, back: "/dashboard") { _, user in
                let snapshot = admin.keyRing.current
                let tenants = try await admin.database.tenants().map { tenant in
                    let keys = snapshot[tenant.id]
                    let rows = (keys?.rows ?? []).reversed().map {
                        SigningKeyListRow(kid: $0.kid, publicKey: $0.publicKey, status: $0.status.rawValue, created: DashboardFormat.time($0.createdAt), canRetire: $0.status == .grace || $0.status == .next)
                    }
                    return TenantSigningKeys(
                        id: tenant.id, name: tenant.name, keys: rows, next: keys?.next?.kid,
                        trustedKeys: "trustedKeys: [\n" + Self.trustedKeysLines(keys) + "\n],"
                    )
                }
                return renderer.page("signing_keys", SigningKeysView(chrome: chrome("Signing keys", context, user: user, section: "keys"), tenants: tenants))
            }
        }
        dash.post("/signing-keys/rotate") { request, context -> Response in
            await guarded(request, context, post: true, back: "/dashboard/signing-keys") { _, user in
                let outcomes = try await admin.rotateSigningKeys(tenantId: nil, actor: user.actor)
                flash(context, "Rotated \(outcomes.count) tenant(s); the previous keys stay trusted until you retire them.")
                return .redirect(to: "/dashboard/signing-keys")
            }
        }
        dash.post("/signing-keys/:kid/retire") { request, context -> Response in
            await guarded(request, context, post: true, back: "/dashboard/signing-keys") { _, user in
                let kid = try context.parameters.require("kid")
                try await admin.retireSigningKey(kid: kid, tenantId: nil, actor: user.actor)
                flash(context, "Key \(kid) retired; it has left the keysets.")
                return .redirect(to: "/dashboard/signing-keys")
            }
        }
        dash.post("/t/:tenant/signing-keys/prepare") { request, context -> Response in
            await guarded(request, context, post: true, back: "/dashboard/signing-keys") { _, user in
                let row = try await admin.prepareSigningKey(tenantId: try context.parameters.require("tenant"), actor: user.actor)
                flash(context, "Key \(row.kid) is published as next. Ship it in your app (see trustedKeys below), then rotate.")
                return .redirect(to: "/dashboard/signing-keys")
            }
        }
        dash.post("/t/:tenant/signing-keys/rotate") { request, context -> Response in
            await guarded(request, context, post: true, back: "/dashboard/signing-keys") { _, user in
                let rotated = try await admin.rotateSigningKeys(tenantId: try context.parameters.require("tenant"), actor: user.actor)[0]
                flash(context, "Key \(rotated.kid) is active; the previous key stays trusted until you retire it.")
                return .redirect(to: "/dashboard/signing-keys")
            }
        }
        dash.post("/t/:tenant/signing-keys/:kid/retire") { request, context -> Response in
            await guarded(request, context, post: true, back: "/dashboard/signing-keys") { _, user in
                let kid = try context.parameters.require("kid")
                try await admin.retireSigningKey(kid: kid, tenantId: try context.parameters.require("tenant"), actor: user.actor)
                flash(context, "Key \(kid) retired; it has left the keyset.")
                return .redirect(to: "/dashboard/signing-keys")
            }
        }
        dash.get("/audit") { request, context -> Response in
            await guarded(request, context, back: "/dashboard") { _, user in
                let before = try request.uri.queryParameters.get("cursor").flatMap { $0.isEmpty ? nil : $0 }.map { text -> Int64 in
                    guard let value = Int64(text) else { throw APIError.invalidRequest("That page link is not one this server made.") }
                    return value
                }
                let entries = try await admin.database.auditLog(limit: 51, beforeId: before)
                let page = entries.prefix(50)
                return renderer.page("audit", AuditView(
                    chrome: chrome("Audit log", context, user: user, section: "audit"),
                    entries: page.map {
                        AuditRow(at: DashboardFormat.time($0.at), actor: $0.actor, action: $0.action, tenant: $0.tenantId, target: $0.target,
                                 details: Self.readableDetails($0.details))
                    },
                    nextURL: entries.count > 50 ? page.last.map { "/dashboard/audit?cursor=\($0.id)" } : nil
                ))
            }
        }
    }

    static func readableDetails(_ json: String) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else { return json }
        return object.keys.sorted().map { "\($0)=\(object[$0].map { "\($0)" } ?? "")" }.joined(separator: " ")
    }

    // MARK: Plumbing

    /// Runs `body` for a signed-in user, after checking the form's CSRF token on POST. Errors
    /// become pages: after a form, the form's page again with the reason; otherwise an error page.
    private func guarded(
        _ request: Request, _ context: DashboardContext, post: Bool = false, back: String,
        _ body: (FormFields, SignedIn) async throws -> Response
    ) async -> Response {
        let current: DashboardSession?
        do {
            current = try await currentSession(context)
        } catch {
            return errorPage(context, status: .serviceUnavailable, "The database is unavailable; try again shortly.", back: back)
        }
        guard let session = current, let email = session.email else {
            if post { return .redirect(to: "/dashboard/login") }
            var target = request.uri.path
            if let query = request.uri.query, !query.isEmpty { target += "?" + query }
            return .redirect(to: "/dashboard/login?" + FormEncoding.encode([("next", target)]))
        }
        var form = FormFields(body: "")
        if post {
            guard let read = await readForm(request) else {
                return errorPage(context, status: .contentTooLarge, "That form was larger than 64 KiB.", back: back)
            }
            guard Self.csrfMatches(read, session.csrf) else {
                return errorPage(context, status: .forbidden, "This form has expired or did not come from this dashboard; nothing was changed. Reload the page and try again.", back: back)
            }
            form = read
        }
        let user = SignedIn(email: email, csrf: session.csrf)
        do {
            return try await body(form, user)
        } catch let error as APIError {
            if post && error.status.code < 500 && error.status != .notFound {
                flash(context, error: error.message)
                return .redirect(to: back)
            }
            return errorPage(context, status: error.status, error.message, back: back)
        } catch {
            logger.warning("dashboard request failed", metadata: ["error": "\(error)"])
            return errorPage(context, status: .internalServerError, "Something went wrong; nothing you asked for was half-done. Try again.", back: back)
        }
    }

    /// The signed-in session if its user still exists with the password it signed in with: a
    /// deleted user or a password reset ends every earlier session (it is cleared here).
    private func currentSession(_ context: DashboardContext) async throws -> DashboardSession? {
        guard let session = context.signedIn, let userId = session.userId else { return nil }
        guard let user = try await admin.database.dashboardUser(id: userId),
              let stamp = session.credential,
              ConstantTime.equals(Array(stamp.utf8), Array(DashboardAccounts.credentialStamp(user).utf8)) else {
            context.sessions.clearSession()
            return nil
        }
        return session
    }

    private func readForm(_ request: Request) async -> FormFields? {
        var request = request
        guard let body = try? await request.collectBody(upTo: Self.maxFormBytes) else { return nil }
        return FormFields(body: String(buffer: body))
    }

    private static func csrfMatches(_ form: FormFields, _ expected: String) -> Bool {
        guard let token = form["_csrf"] else { return false }
        return ConstantTime.equals(Array(token.utf8), Array(expected.utf8))
    }

    /// The cookie that carries the sign-in form's CSRF token.
    static let loginCookie = "keylight_login"

    /// Where to go after sign-in: only a dashboard path, never another site.
    static func safeNext(_ next: String?) -> String {
        guard let next, next.hasPrefix("/dashboard"), !next.hasPrefix("//"), !next.contains("\\"), next.utf8.count <= 1_024,
              !next.contains(where: { $0.isNewline }) else { return "/dashboard" }
        return next
    }

    static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64.encodeURLSafe((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The page chrome, taking (and clearing) the session's one-time messages.
    private func chrome(_ title: String, _ context: DashboardContext, user: SignedIn? = nil, session: DashboardSession? = nil, section: String = "tenants") -> Chrome {
        let current = session ?? context.sessions.session
        if current?.flash != nil || current?.flashError != nil {
            context.sessions.withLockedSession { data in
                data?.flash = nil
                data?.flashError = nil
            }
        }
        return Chrome(title: title, email: user?.email, csrf: user?.csrf ?? current?.csrf ?? "", flash: current?.flash, error: current?.flashError, section: section)
    }

    private func flash(_ context: DashboardContext, _ message: String) {
        context.sessions.withLockedSession { $0?.flash = message }
    }

    private func flash(_ context: DashboardContext, error message: String) {
        context.sessions.withLockedSession { $0?.flashError = message }
    }

    private func errorPage(_ context: DashboardContext, status: HTTPResponse.Status, _ message: String, back: String) -> Response {
        let session = context.sessions.session
        let view = ErrorView(
            chrome: Chrome(title: "Error \(status.code)", email: session?.email, csrf: session?.csrf ?? ""),
            status: status.code, message: message, back: back
        )
        return renderer.page("error", view, status: status)
    }
}
