import Foundation
import Hummingbird
import HummingbirdAuth
import KeylightCore

/// Sign-in and sign-out. The sign-in form is the one page without a session: its CSRF token
/// is a double-submit cookie, so an anonymous page view writes nothing to the database.
struct AccountController: Sendable {
    let dashboard: DashboardRoutes
    var pages: DashboardPages { dashboard.pages }

    /// The cookie that carries the sign-in form's CSRF token.
    static let loginCookie = "keylight_login"

    struct LoginForm: Decodable {
        @FormText var email: String?
        /// Not trimmed: a password is exactly what was typed.
        var password: String?
        @FormText var next: String?
    }

    func register(on group: RouterGroup<DashboardContext>) {
        // Open to anyone; failures (an unreachable database) are pages that lead back to the form.
        let login = group.group("/login").add(middleware: DashboardErrorMiddleware(pages: pages, logger: dashboard.logger, back: { _ in "/dashboard/login" }))
        login.get { request, context -> Response in
            if context.signedIn != nil { return .redirect(to: "/dashboard") }
            let token = Self.newToken()
            var response = pages.page("login", LoginView(
                chrome: pages.chrome("Sign in", context, csrf: token), email: nil, next: Self.safeNext(request.uri.queryParameters.get("next"))
            ))
            response.setCookie(loginCookie(token, maxAge: 3_600))
            return response
        }
        login.post { request, context -> Response in
            try await signIn(request, context)
        }
        group.signedIn(dashboard: dashboard).post("/logout") { _, context -> Response in
            context.sessions.clearSession()
            return .redirect(to: "/dashboard/login")
        }
    }

    private func signIn(_ request: Request, _ context: DashboardContext) async throws -> Response {
        let token = request.cookies[Self.loginCookie]?.value ?? ""
        if case .limited = dashboard.loginLimiter.acquire(context.rateLimitKey) {
            return pages.errorPage(context, status: .tooManyRequests, "Too many sign-in attempts from your address; wait a minute.", back: "/dashboard/login")
        }
        var request = request
        guard !token.isEmpty, let form = try? await DashboardForm.read(&request), (try? form.csrfMatches(token)) == true,
              let fields = try? form.decode(LoginForm.self) else {
            return pages.errorPage(context, status: .forbidden, "The sign-in form expired. Reload the page and try again.", back: "/dashboard/login")
        }
        let next = Self.safeNext(fields.next)
        let email = fields.email ?? ""
        let result: DashboardAccounts.SignIn
        do {
            result = try await dashboard.accounts.signIn(email: email, password: fields.password ?? "")
        } catch is PasswordHasher.Busy {
            var response = pages.errorPage(context, status: .tooManyRequests, "The server is busy checking other sign-ins; try again in a few seconds.", back: "/dashboard/login")
            response.headers[.retryAfter] = "5"
            return response
        }
        switch result {
        case .success(let user):
            // A new session id at sign-in: a session planted before sign-in is worth nothing after it.
            context.sessions.createSession(
                DashboardSession(userId: user.id, email: user.email, csrf: Self.newToken(), credential: DashboardAccounts.credentialStamp(user)),
                expiresIn: DashboardRoutes.sessionLifetime
            )
            var response = Response.redirect(to: next)
            response.setCookie(loginCookie("", maxAge: 0))
            return response
        case .wrongCredentials:
            var view = LoginView(chrome: pages.chrome("Sign in", context, csrf: token), email: email, next: next)
            view.chrome.error = "Wrong email or password. After 5 failed attempts an account is locked for 15 minutes."
            return pages.page("login", view, status: .unauthorized)
        }
    }

    private func loginCookie(_ value: String, maxAge: Int) -> Cookie {
        Cookie(name: Self.loginCookie, value: value, maxAge: maxAge, path: "/dashboard/login", secure: dashboard.secureCookies, httpOnly: true, sameSite: .strict)
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
