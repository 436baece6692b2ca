import Hummingbird
import HummingbirdAuth
import Logging

/// `/dashboard`: server-rendered pages over the same services as the admin API. Every change
/// goes through ``AdminService`` (and so into the audit log) as `user:<email>`.
///
/// This type wires the area controllers under one session: each controller's routes sit in
/// groups made by ``Hummingbird/RouterGroup/signedIn(_:dashboard:back:)``, whose middleware turns
/// failures into pages and lets only a signed-in user (and, for forms, the session's CSRF token)
/// through.
struct DashboardRoutes: Sendable {
    let admin: AdminService
    /// Releases, their feed settings and figures; nil on a server assembled without them (the
    /// releases page then answers 404).
    let releases: ReleaseService?
    let accounts: DashboardAccounts
    let pages: DashboardPages
    let sessions: SQLSessionStore
    /// Sign-in attempts per client address.
    let loginLimiter: RateLimiter<IPAddress>
    /// The server's public URL (the app set-up's `KeylightServerURL`, webhook URLs); nil = from the request's Host.
    let publicURL: String?
    /// Cookies carry `Secure` (the dashboard is served over TLS).
    let secureCookies: Bool
    let logger: Logger
    let auth: DashboardAuthMiddleware
    /// Every signed-in route, with its form's fields (tests walk it).
    let routes = RouteTable(prefix: "/dashboard")
    static let sessionLifetime: Duration = .seconds(8 * 3_600)
    /// A session unused this long is signed out (seconds).
    let idleTimeout: Int64
    static let sessionCookie = "keylight_session"

    init(
        admin: AdminService, releases: ReleaseService? = nil, accounts: DashboardAccounts, renderer: DashboardRenderer, sessions: SQLSessionStore,
        loginLimiter: RateLimiter<IPAddress>, publicURL: String?, secureCookies: Bool, idleTimeout: Int64 = 30 * 60, logger: Logger
    ) {
        self.idleTimeout = idleTimeout
        self.admin = admin
        self.releases = releases
        self.accounts = accounts
        self.pages = DashboardPages(renderer: renderer)
        self.sessions = sessions
        self.loginLimiter = loginLimiter
        self.publicURL = publicURL
        self.secureCookies = secureCookies
        self.logger = logger
        self.auth = DashboardAuthMiddleware(accounts: accounts, sessions: sessions, admin: admin, idleTimeout: idleTimeout)
    }

    func register(on router: some RouterMethods<KeylightRequestContext>) {
        let renderer = pages.renderer
        router.get("/dashboard/static/dashboard.css") { _, _ in renderer.asset(renderer.stylesheet, contentType: "text/css; charset=utf-8") }
        router.get("/dashboard/static/dashboard.js") { _, _ in renderer.asset(renderer.script, contentType: "text/javascript; charset=utf-8") }
        let dashboard = router.group("/dashboard", context: DashboardContext.self)
            // Outside the session: a session that cannot be saved (the database is down) is a page too.
            .add(middleware: DashboardErrorMiddleware(pages: pages, logger: logger))
            .add(middleware: SessionMiddleware(
                storage: sessions,
                configuration: .init(
                    sessionCookieParameters: .init(name: Self.sessionCookie, path: "/dashboard", secure: secureCookies, sameSite: .lax),
                    keyPrefix: "", defaultSessionExpiration: Self.sessionLifetime
                )
            ))
        AccountController(dashboard: self).register(on: dashboard)
        TenantsController(dashboard: self).register(on: dashboard)
        ProductsController(dashboard: self).register(on: dashboard)
        InsightsController(dashboard: self).register(on: dashboard)
        LicensesController(dashboard: self).register(on: dashboard)
        SigningKeysController(dashboard: self).register(on: dashboard)
        AuditController(dashboard: self).register(on: dashboard)
        MailSettingsController(dashboard: self).register(on: dashboard)
        MerchantsController(dashboard: self).register(on: dashboard)
        WebhooksController(dashboard: self).register(on: dashboard)
        ReleasesController(dashboard: self).register(on: dashboard)
        TeamController(dashboard: self).register(on: dashboard)
        SecurityController(dashboard: self).register(on: dashboard)
    }

    /// The server's URL as an app reaches it: `--public-url` (`KEYLIGHT_PUBLIC_URL`), else this
    /// request's `Host` over http (the server speaks plain HTTP; the trusted-proxy setting covers
    /// only `X-Forwarded-For`, so a proxy's scheme and host are not known without `--public-url`).
    func serverURL(_ request: Request) -> String {
        publicURL ?? "http://\(request.head.authority ?? "localhost:8080")"
    }
}
