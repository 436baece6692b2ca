import Foundation
import Hummingbird
import HummingbirdAuth
import KeylightCore

/// The gate in front of every signed-in dashboard route. A visitor without a live session is
/// sent to the sign-in page (a page view remembers where it was going; a form does not: it is
/// not re-posted after sign-in). A session is live while its user exists with the password it
/// signed in with, its row in the session list is not ended, and it has not been idle longer
/// than the idle timeout. A session still waiting for its second factor reaches only that
/// step; a user whose tenant requires a second factor and who has none reaches only the page
/// that sets it up. A form (POST) is read once, bounded, and must carry the session's CSRF
/// token; the handler gets both as ``DashboardContext/user`` and ``DashboardContext/form``.
struct DashboardAuthMiddleware: RouterMiddleware {
    typealias Context = DashboardContext
    let accounts: DashboardAccounts
    let sessions: SQLSessionStore
    let admin: AdminService
    let idleTimeout: Int64

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if context.sessions.session == nil, let cookie = request.cookies[DashboardRoutes.sessionCookie]?.value {
            // The session middleware reads an unreadable store as "signed out". Asking again
            // tells an expired session (sign in) from an outage (the 503 page, not a sign-in
            // form that cannot work); only a request with a cookie but no session pays for it.
            _ = try await sessions.get(key: cookie, as: DashboardSession.self)
        }
        guard let (session, user) = try await currentSession(context) else {
            if request.method == .post { return .redirect(to: "/dashboard/login") }
            var target = request.uri.path
            if let query = request.uri.query, !query.isEmpty { target += "?" + query }
            return .redirect(to: "/dashboard/login?" + FormEncoding.encode([("next", target)]))
        }
        guard session.awaitingSecondFactor != true, let sid = session.sid else { return .redirect(to: "/dashboard/login/second-factor") }
        if !user.hasTwoFactor, !request.uri.path.hasPrefix("/dashboard/account"), request.uri.path != "/dashboard/logout",
           try await accounts.twoFactorRequired(userId: user.id) {
            context.sessions.withLockedSession { $0?.flashError = "Your team requires a second factor: set one up to go on." }
            return .redirect(to: "/dashboard/account")
        }
        var request = request
        var context = context
        if request.method == .post {
            let form = try await DashboardForm.read(&request)
            guard try form.csrfMatches(session.csrf) else { throw DashboardRefusal.foreignForm }
            context.form = form
        }
        let origin = RequestOrigin(address: context.client.map { "\($0)" }, userAgent: request.headers[.userAgent])
        context.user = SignedInUser(
            id: user.id, email: user.email, csrf: session.csrf,
            principal: try await admin.principal(user: user, address: origin.address, userAgent: origin.userAgent), sid: sid
        )
        return try await next(request, context)
    }

    /// The signed-in session and its user, if the session is live (or still waiting for its
    /// second factor); a dead one is cleared here.
    private func currentSession(_ context: Context) async throws -> (DashboardSession, DashboardUser)? {
        guard let session = context.signedIn, let userId = session.userId else { return nil }
        let now = accounts.clock.unixSeconds
        guard let user = try await accounts.user(id: userId),
              let stamp = session.credential,
              ConstantTime.equals(Array(stamp.utf8), Array(DashboardAccounts.credentialStamp(user).utf8)) else {
            context.sessions.clearSession()
            return nil
        }
        if session.awaitingSecondFactor == true { return (session, user) }
        guard let sid = session.sid, try await accounts.sessionIsLive(sid: sid, userId: userId, now: now, idleSince: now - idleTimeout) else {
            context.sessions.clearSession()
            return nil
        }
        return (session, user)
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
            .add(middleware: dashboard.auth), path: path, table: dashboard.routes, admin: dashboard.admin, back: back)
    }
}

/// Signed-in routes. A form reaches its handler only through here, decoded strictly: a field the
/// form does not define is refused (400 `UNKNOWN_FIELD`, as in the admin API) before anything
/// changes, and a POST that takes no fields takes nothing but its CSRF token.
///
/// Every route names the ``Permission`` it needs (or ``ownAccount``, for the user's own sign-in
/// settings), and ``AdminService/authorize(_:_:tenantId:productId:)`` checks it with the route's
/// `:tenant` and `:product`, as for the admin API. A form whose permission
/// ``Permission/needsRecentSignIn`` is sent to confirm the password first when the last
/// confirmation is more than ten minutes old.
struct SignedInRoutes {
    let group: RouterGroup<DashboardContext>
    /// The group's path below `/dashboard`, and where routes are recorded.
    let path: RouterPath
    let table: RouteTable
    let admin: AdminService
    let back: @Sendable (DashboardContext) -> String
    typealias Handler = @Sendable (Request, DashboardContext) async throws -> Response
    /// How recent a confirmation dangerous forms need.
    static let confirmationWindow: Int64 = 10 * 60

    /// What a route needs: a permission where it acts, or only to be the signed-in user.
    enum Access: Sendable {
        case permission(Permission)
        /// The user's own account (second factor, sessions, sign-out).
        case ownAccount
    }

    private func full(_ route: RouterPath) -> RouterPath {
        RouterPath([path.description, route.description].map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "/")) }.filter { !$0.isEmpty }.joined(separator: "/"))
    }

    func get(_ path: RouterPath, _ permission: Permission, _ handler: @escaping Handler) {
        get(path, access: .permission(permission), handler)
    }

    /// The group's own page.
    func get(_ permission: Permission, _ handler: @escaping Handler) {
        get("", access: .permission(permission), handler)
    }

    func get(_ path: RouterPath = "", access: Access, _ handler: @escaping Handler) {
        table.add("GET", full(path), fields: nil, access: access)
        let check = self.check
        group.get(path) { request, context in
            if let refusal = try check(access, request, context) { return refusal }
            return try await handler(request, context)
        }
    }

    /// A POST whose form has no fields of its own.
    func post(_ path: RouterPath, _ permission: Permission, _ handler: @escaping Handler) {
        post(path, access: .permission(permission), handler)
    }

    func post(_ path: RouterPath = "", access: Access, _ handler: @escaping Handler) {
        table.add("POST", full(path), fields: [], access: access)
        let check = self.check
        group.post(path) { request, context in
            if let refusal = try check(access, request, context) { return refusal }
            _ = try context.postedForm(NoFields.self)
            return try await handler(request, context)
        }
    }

    /// A POST whose form is `Form`.
    func post<Form: Decodable & Sendable>(_ path: RouterPath, _ permission: Permission, form: Form.Type, _ handler: @escaping @Sendable (Form, Request, DashboardContext) async throws -> Response) {
        post(path, access: .permission(permission), form: form, handler)
    }

    /// A form posted to the group's own path.
    func post<Form: Decodable & Sendable>(_ permission: Permission, form: Form.Type, _ handler: @escaping @Sendable (Form, Request, DashboardContext) async throws -> Response) {
        post("", access: .permission(permission), form: form, handler)
    }

    func post<Form: Decodable & Sendable>(_ path: RouterPath = "", access: Access, form: Form.Type, _ handler: @escaping @Sendable (Form, Request, DashboardContext) async throws -> Response) {
        table.add("POST", full(path), fields: StrictDecoding.fieldNames(of: Form.self), access: access)
        let check = self.check
        group.post(path) { request, context in
            if let refusal = try check(access, request, context) { return refusal }
            return try await handler(try context.postedForm(Form.self), request, context)
        }
    }

    /// The permission check, then (for a dangerous form) the recent confirmation: nil lets the
    /// request through; a response sends it elsewhere.
    private var check: @Sendable (Access, Request, DashboardContext) throws -> Response? {
        let (admin, back) = (self.admin, self.back)
        return { access, request, context in
            let user = try context.requireUser()
            guard case .permission(let permission) = access else { return nil }
            do {
                try admin.authorize(user.principal, permission, tenantId: context.parameters.get("tenant"), productId: context.parameters.get("product"))
            } catch let error as APIError {
                // A page, with its status, for forms too: going back to a form the role cannot use helps no one.
                throw DashboardRefusal(status: error.status, message: error.message)
            }
            if request.method == .post, permission.needsRecentSignIn,
               (context.sessions.session?.confirmedAt ?? 0) < admin.clock.unixSeconds - Self.confirmationWindow {
                context.sessions.withLockedSession { $0?.flashError = "Confirm it is you to do that: the last confirmation is over ten minutes old. Then send the form again." }
                return .redirect(to: "/dashboard/account/confirm?" + FormEncoding.encode([("next", back(context))]))
            }
            return nil
        }
    }
}
