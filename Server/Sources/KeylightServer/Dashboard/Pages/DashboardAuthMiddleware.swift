import Foundation
import Hummingbird
import HummingbirdAuth
import KeylightCore

/// The gate in front of every signed-in dashboard route. A visitor without a live session is
/// sent to the sign-in page (a page view remembers where it was going; a form does not: it is
/// not re-posted after sign-in). A form (POST) is read once, bounded, and must carry the
/// session's CSRF token; the handler gets both as ``DashboardContext/user`` and
/// ``DashboardContext/form``.
struct DashboardAuthMiddleware: RouterMiddleware {
    typealias Context = DashboardContext
    let accounts: DashboardAccounts
    let sessions: SQLSessionStore

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if context.sessions.session == nil, let cookie = request.cookies[DashboardRoutes.sessionCookie]?.value {
            // The session middleware reads an unreadable store as "signed out". Asking again
            // tells an expired session (sign in) from an outage (the 503 page, not a sign-in
            // form that cannot work); only a request with a cookie but no session pays for it.
            _ = try await sessions.get(key: cookie, as: DashboardSession.self)
        }
        guard let session = try await currentSession(context), let email = session.email else {
            if request.method == .post { return .redirect(to: "/dashboard/login") }
            var target = request.uri.path
            if let query = request.uri.query, !query.isEmpty { target += "?" + query }
            return .redirect(to: "/dashboard/login?" + FormEncoding.encode([("next", target)]))
        }
        var request = request
        var context = context
        if request.method == .post {
            let form = try await DashboardForm.read(&request)
            guard try form.csrfMatches(session.csrf) else { throw DashboardRefusal.foreignForm }
            context.form = form
        }
        context.user = SignedInUser(email: email, csrf: session.csrf)
        return try await next(request, context)
    }

    /// The signed-in session if its user still exists with the password it signed in with: a
    /// deleted user or a password reset ends every earlier session (it is cleared here).
    private func currentSession(_ context: Context) async throws -> DashboardSession? {
        guard let session = context.signedIn, let userId = session.userId else { return nil }
        guard let user = try await accounts.user(id: userId),
              let stamp = session.credential,
              ConstantTime.equals(Array(stamp.utf8), Array(DashboardAccounts.credentialStamp(user).utf8)) else {
            context.sessions.clearSession()
            return nil
        }
        return session
    }
}

extension RouterGroup<DashboardContext> {
    /// A group of signed-in routes under `path`: failures become pages (a failed form returns
    /// to `back`), then the sign-in and CSRF gate.
    func signedIn(
        _ path: RouterPath = "", dashboard: DashboardRoutes, back: @escaping @Sendable (DashboardContext) -> String = { _ in "/dashboard" }
    ) -> SignedInRoutes {
        SignedInRoutes(group: group(path)
            .add(middleware: DashboardErrorMiddleware(pages: dashboard.pages, logger: dashboard.logger, back: back))
            .add(middleware: dashboard.auth), path: path, table: dashboard.routes)
    }
}

/// Signed-in routes. A form reaches its handler only through here, decoded strictly: a field the
/// form does not define is refused (400 `UNKNOWN_FIELD`, as in the admin API) before anything
/// changes, and a POST that takes no fields takes nothing but its CSRF token.
struct SignedInRoutes {
    let group: RouterGroup<DashboardContext>
    /// The group's path below `/dashboard`, and where routes are recorded.
    let path: RouterPath
    let table: RouteTable
    typealias Handler = @Sendable (Request, DashboardContext) async throws -> Response

    private func full(_ route: RouterPath) -> RouterPath {
        RouterPath([path.description, route.description].map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "/")) }.filter { !$0.isEmpty }.joined(separator: "/"))
    }

    func get(_ path: RouterPath = "", _ handler: @escaping Handler) {
        table.add("GET", full(path), fields: nil)
        group.get(path) { request, context in try await handler(request, context) }
    }

    /// A POST whose form has no fields of its own.
    func post(_ path: RouterPath = "", _ handler: @escaping Handler) {
        table.add("POST", full(path), fields: [])
        group.post(path) { request, context in
            _ = try context.postedForm(NoFields.self)
            return try await handler(request, context)
        }
    }

    /// A POST whose form is `Form`.
    func post<Form: Decodable & Sendable>(_ path: RouterPath = "", form: Form.Type, _ handler: @escaping @Sendable (Form, Request, DashboardContext) async throws -> Response) {
        table.add("POST", full(path), fields: StrictDecoding.fieldNames(of: Form.self))
        group.post(path) { request, context in
            try await handler(try context.postedForm(Form.self), request, context)
        }
    }
}
