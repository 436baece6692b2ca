import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdAuth
import KeylightCore

/// Sign-in (password, then the second factor when the user has one), sign-out, and accepting
/// an invitation. These pages come before a session: their CSRF token is a double-submit
/// cookie, so an anonymous page view writes nothing to the database.
struct AccountController: Sendable {
    let dashboard: DashboardRoutes
    var pages: DashboardPages { dashboard.pages }
    var accounts: DashboardAccounts { dashboard.accounts }

    /// The cookie that carries the sign-in form's CSRF token.
    static let loginCookie = "keylight_login"
    /// How long the password step waits for its second factor.
    static let secondFactorWindow: Duration = .seconds(5 * 60)

    struct LoginForm: Decodable {
        @FormText var email: String?
        /// Not trimmed: a password is exactly what was typed.
        var password: String?
        /// The second factor, sent with the password while sign-in is slowed down.
        @FormText var code: String?
        @FormText var next: String?
    }

    struct CodeForm: Decodable {
        @FormText var code: String?
        @FormText var next: String?
    }

    struct AcceptForm: Decodable {
        var password: String?
        @FormText var code: String?
        enum CodingKeys: String, CodingKey { case password, code }
    }

    func register(on group: RouterGroup<DashboardContext>) {
        // Open to anyone; failures (an unreachable database) are pages that lead back to the form.
        let login = group.group("/login").add(middleware: DashboardErrorMiddleware(pages: pages, logger: dashboard.logger, back: { _ in "/dashboard/login" }))
        login.get { request, context -> Response in
            if context.signedIn?.sid != nil { return .redirect(to: "/dashboard") }
            return loginPage(context, email: nil, next: Self.safeNext(request.uri.queryParameters.get("next")))
        }
        login.post { request, context -> Response in
            try await signIn(request, context)
        }
        login.get("/second-factor") { request, context -> Response in
            guard context.sessions.session?.awaitingSecondFactor == true else { return .redirect(to: "/dashboard/login") }
            return codePage(context, next: Self.safeNext(request.uri.queryParameters.get("next")))
        }
        login.post("/second-factor") { request, context -> Response in
            try await secondFactor(request, context)
        }
        let invite = group.group("/invite").add(middleware: DashboardErrorMiddleware(pages: pages, logger: dashboard.logger, back: { _ in "/dashboard/login" }))
        invite.get("/:token") { _, context -> Response in
            try await invitationPage(context)
        }
        invite.post("/:token") { request, context -> Response in
            try await acceptInvitation(request, context)
        }
        group.signedIn(dashboard: dashboard).post("/logout", access: .ownAccount) { _, context -> Response in
            let user = try context.requireUser()
            _ = try await dashboard.admin.endSession(sid: user.sid, userId: user.id, actor: user.actor)
            context.sessions.clearSession()
            return .redirect(to: "/dashboard/login")
        }
    }

    private func origin(_ request: Request, _ context: DashboardContext) -> RequestOrigin {
        RequestOrigin(address: context.client.map { "\($0)" }, userAgent: request.headers[.userAgent], device: request.cookies[DeviceCookie.name]?.value)
    }

    /// The posted form of a page before sign-in: its double-submit token must match the cookie.
    private func readForm<Form: Decodable>(_ request: Request, _ type: Form.Type) async -> Form? {
        let token = request.cookies[Self.loginCookie]?.value ?? ""
        var request = request
        guard !token.isEmpty, let form = try? await DashboardForm.read(&request), (try? form.csrfMatches(token)) == true else { return nil }
        return try? form.decode(type)
    }

    private func signIn(_ request: Request, _ context: DashboardContext) async throws -> Response {
        if case .limited = dashboard.loginLimiter.acquire(context.rateLimitKey) {
            return pages.errorPage(context, status: .tooManyRequests, "Too many sign-in attempts from your address; wait a minute.", back: "/dashboard/login")
        }
        guard let fields = await readForm(request, LoginForm.self) else {
            return pages.errorPage(context, status: .forbidden, "The sign-in form expired. Reload the page and try again.", back: "/dashboard/login")
        }
        let next = Self.safeNext(fields.next)
        let email = fields.email ?? ""
        let result: DashboardAccounts.SignIn
        do {
            result = try await accounts.signIn(email: email, password: fields.password ?? "", code: fields.code, origin: origin(request, context))
        } catch is PasswordHasher.Busy {
            var response = pages.errorPage(context, status: .tooManyRequests, "The server is busy checking other sign-ins; try again in a few seconds.", back: "/dashboard/login")
            response.headers[.retryAfter] = "5"
            return response
        }
        switch result {
        case .success(let user):
            return try await startSession(user, request, context, next: next)
        case .needsSecondFactor(let user):
            // A new session id, that opens nothing but the second-factor step, for five minutes.
            context.sessions.createSession(
                DashboardSession(userId: user.id, email: user.email, csrf: Self.newToken(), credential: DashboardAccounts.credentialStamp(user), awaitingSecondFactor: true),
                expiresIn: Self.secondFactorWindow
            )
            return .redirect(to: "/dashboard/login/second-factor?" + FormEncoding.encode([("next", next)]))
        case .wrongCredentials:
            var response = loginPage(context, email: email, next: next, status: .unauthorized)
            response.headers[.cacheControl] = "no-store"
            return response
        case .slowedDown(let seconds):
            var response = loginPage(
                context, email: email, next: next, status: .tooManyRequests, askCode: true,
                error: "Too many failed sign-ins for this account or from your address: try again in \(seconds) seconds, or now with your authenticator code."
            )
            response.headers[.retryAfter] = String(seconds)
            return response
        }
    }

    private func secondFactor(_ request: Request, _ context: DashboardContext) async throws -> Response {
        guard let session = context.sessions.session, session.awaitingSecondFactor == true, let userId = session.userId else {
            return .redirect(to: "/dashboard/login")
        }
        guard let fields = await readForm(request, CodeForm.self) else {
            return pages.errorPage(context, status: .forbidden, "The form expired. Sign in again.", back: "/dashboard/login")
        }
        let next = Self.safeNext(fields.next)
        switch try await accounts.completeSecondFactor(userId: userId, code: fields.code ?? "", origin: origin(request, context)) {
        case .success(let user):
            return try await startSession(user, request, context, next: next)
        case .slowedDown(let seconds):
            var response = codePage(context, next: next, status: .tooManyRequests, error: "Too many wrong codes: try again in \(seconds) seconds.")
            response.headers[.retryAfter] = String(seconds)
            return response
        case .wrongCredentials, .needsSecondFactor:
            return codePage(context, next: next, status: .unauthorized, error: "That code is not right (or was used already). Type the current code from your authenticator, or a recovery code.")
        }
    }

    /// A signed-in session: a new session id (one planted before sign-in is worth nothing
    /// after it), a row in the user's session list, and a fresh confirmation.
    private func startSession(_ user: DashboardUser, _ request: Request, _ context: DashboardContext, next: String) async throws -> Response {
        let sid = Self.newToken()
        let origin = origin(request, context)
        try await dashboard.admin.startSession(sid: sid, userId: user.id, origin: origin)
        context.sessions.createSession(
            DashboardSession(
                userId: user.id, email: user.email, csrf: Self.newToken(), credential: DashboardAccounts.credentialStamp(user),
                sid: sid, confirmedAt: dashboard.admin.clock.unixSeconds
            ),
            expiresIn: DashboardRoutes.sessionLifetime
        )
        var response = Response.redirect(to: next)
        response.setCookie(loginCookie("", maxAge: 0))
        // This browser has signed in to the account: its attempts get a throttle of their own.
        let device = try DeviceCookie.make(email: user.email, now: dashboard.admin.clock.unixSeconds, sealer: dashboard.admin.sealer)
        response.setCookie(Cookie(
            name: DeviceCookie.name, value: device, maxAge: Int(DeviceCookie.lifetime), path: "/dashboard",
            secure: dashboard.secureCookies, httpOnly: true, sameSite: .strict
        ))
        return response
    }

    // MARK: Invitations

    private func invitationPage(_ context: DashboardContext, error: String? = nil, status: HTTPResponse.Status = .ok) async throws -> Response {
        let token = try context.parameters.require("token")
        guard let invitation = try await dashboard.admin.invitation(token: token) else {
            return pages.errorPage(context, status: .notFound, "This invitation was used, withdrawn or has expired. Ask for a new one.", back: "/dashboard/login")
        }
        let existing = try await dashboard.admin.dashboardUserExists(email: invitation.email)
        let tenant = try await dashboard.admin.requireTenant(invitation.tenantId)
        let csrf = Self.newToken()
        var view = CredentialsView(
            chrome: pages.chrome("Join \(tenant.name)", context, csrf: csrf),
            heading: "Join \(tenant.name)",
            intro: "You are invited as \(Role(rawValue: invitation.role)?.title ?? invitation.role) with \(invitation.email). "
                + (existing ? "Sign in with your password to accept." : "Choose a password (at least 12 characters) to accept."),
            action: "/dashboard/invite/\(token)", next: nil,
            fields: [CredentialField(name: "password", label: "Password", type: "password", autocomplete: existing ? "current-password" : "new-password")]
                + (existing ? [CredentialField(name: "code", label: "Authenticator code (if you use one)", type: "text", autocomplete: "one-time-code", required: false)] : []),
            button: "Accept the invitation"
        )
        view.chrome.error = error
        var response = pages.page("credentials", view, status: status)
        response.setCookie(loginCookie(csrf, maxAge: 3_600, path: "/dashboard/invite"))
        response.headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return response
    }

    private func acceptInvitation(_ request: Request, _ context: DashboardContext) async throws -> Response {
        if case .limited = dashboard.loginLimiter.acquire(context.rateLimitKey) {
            return pages.errorPage(context, status: .tooManyRequests, "Too many attempts from your address; wait a minute.", back: "/dashboard/login")
        }
        let token = try context.parameters.require("token")
        guard let fields = await readForm(request, AcceptForm.self) else {
            return pages.errorPage(context, status: .forbidden, "The form expired. Open the invitation link again.", back: "/dashboard/login")
        }
        guard let invitation = try await dashboard.admin.invitation(token: token) else { return try await invitationPage(context) }
        let origin = origin(request, context)
        let user: DashboardUser
        if try await dashboard.admin.dashboardUserExists(email: invitation.email) {
            switch try await accounts.signIn(email: invitation.email, password: fields.password ?? "", code: fields.code, origin: origin) {
            case .success(let signedIn): user = signedIn
            case .needsSecondFactor: return try await invitationPage(context, error: "Type your authenticator code too.", status: .unauthorized)
            case .wrongCredentials: return try await invitationPage(context, error: "Wrong password (or code).", status: .unauthorized)
            case .slowedDown(let seconds): return try await invitationPage(context, error: "Too many failed attempts: try again in \(seconds) seconds.", status: .tooManyRequests)
            }
        } else {
            do {
                user = try await accounts.createUser(email: invitation.email, password: fields.password ?? "", membership: nil, actor: AuditActor(name: "user:\(invitation.email)", kind: .user, id: nil, address: origin.address, userAgent: origin.userAgent))
            } catch let error as DashboardAccounts.AccountError {
                return try await invitationPage(context, error: error.description, status: .badRequest)
            }
        }
        guard let accepted = try await dashboard.admin.acceptInvitation(token: token, user: user, origin: origin) else { return try await invitationPage(context) }
        try await accounts.recordSignIn(userId: user.id)
        let response = try await startSession(user, request, context, next: "/dashboard/t/\(accepted.tenantId)")
        // On the new session: a flash set before it was made would be lost with the old one.
        pages.flash(context, "Welcome: you are a member of \(accepted.tenantId) as \(Role(rawValue: accepted.role)?.title ?? accepted.role).")
        return response
    }

    // MARK: Pages

    private func loginPage(
        _ context: DashboardContext, email: String?, next: String, status: HTTPResponse.Status = .ok, askCode: Bool = false, error: String? = nil
    ) -> Response {
        let token = Self.newToken()
        var view = LoginView(chrome: pages.chrome("Sign in", context, csrf: token), email: email, next: next, askCode: askCode)
        if status == .unauthorized { view.chrome.error = "Wrong email or password. Repeated failures slow sign-in down for this account and your address." }
        if let error { view.chrome.error = error }
        var response = pages.page("login", view, status: status)
        response.setCookie(loginCookie(token, maxAge: 3_600))
        return response
    }

    private func codePage(_ context: DashboardContext, next: String, status: HTTPResponse.Status = .ok, error: String? = nil) -> Response {
        let token = Self.newToken()
        var view = CredentialsView(
            chrome: pages.chrome("Second factor", context, csrf: token), heading: "Second factor",
            intro: "Type the six-digit code from your authenticator app, or one of your recovery codes.",
            action: "/dashboard/login/second-factor", next: next,
            fields: [CredentialField(name: "code", label: "Code", type: "text", autocomplete: "one-time-code", inputmode: "numeric")],
            button: "Sign in"
        )
        view.chrome.error = error
        var response = pages.page("credentials", view, status: status)
        response.setCookie(loginCookie(token, maxAge: 600))
        return response
    }

    private func loginCookie(_ value: String, maxAge: Int, path: String = "/dashboard/login") -> Cookie {
        Cookie(name: Self.loginCookie, value: value, maxAge: maxAge, path: path, secure: dashboard.secureCookies, httpOnly: true, sameSite: .strict)
    }

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
}
