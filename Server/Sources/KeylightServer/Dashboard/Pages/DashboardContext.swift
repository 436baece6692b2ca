import Foundation
import Hummingbird
import HummingbirdAuth
import NIOCore

/// What a dashboard session remembers: who signed in (nil before sign-in) and the session's
/// CSRF token, which every form carries back.
struct DashboardSession: Codable, Sendable, Equatable {
    var userId: String?
    var email: String?
    var csrf: String
    /// One-time messages for the next page (after a redirect).
    var flash: String? = nil
    var flashError: String? = nil
    /// ``DashboardAccounts/credentialStamp(_:)`` of the user at sign-in.
    var credential: String? = nil
    /// The session's row in the user's session list (`dashboard_user_sessions`): ended there, or
    /// idle too long, it is signed out. Sessions made before the list existed have none.
    var sid: String? = nil
    /// The password was right but the second factor is still to come: nothing but that page opens.
    var awaitingSecondFactor: Bool? = nil
    /// When the password (and the second factor) were last given, for actions that ask again
    /// after ten minutes.
    var confirmedAt: Int64? = nil
}

/// Who is signed in, for one request (set by ``DashboardAuthMiddleware``).
struct SignedInUser: Sendable {
    var id: String
    var email: String
    var csrf: String
    /// The user's memberships, and the request's address and user agent for the audit log.
    var principal: Principal
    /// The session's row in the session list.
    var sid: String
    var actor: AuditActor { principal.actor }
}

/// The request context of `/dashboard` routes: the parent's storage plus the session. Only
/// dashboard requests pay for a session.
struct DashboardContext: ChildRequestContext, SessionRequestContext {
    var coreContext: CoreRequestContextStorage
    let sessions: SessionContext<DashboardSession>
    let rateLimitKey: IPAddress
    /// The client's address (for the audit log and sign-in throttling).
    let client: IPAddress?
    /// The signed-in user, on routes behind ``DashboardAuthMiddleware``.
    var user: SignedInUser?
    /// The posted form, read (bounded) and CSRF-checked by ``DashboardAuthMiddleware``.
    var form: DashboardForm?

    init(context: KeylightRequestContext) throws {
        coreContext = context.coreContext
        rateLimitKey = context.rateLimitKey
        client = context.client
        sessions = SessionContext()
    }

    /// The signed-in user's session, if any.
    var signedIn: DashboardSession? {
        guard let session = sessions.session, session.userId != nil else { return nil }
        return session
    }

    /// The signed-in user; only routes behind ``DashboardAuthMiddleware`` ask.
    func requireUser() throws -> SignedInUser {
        guard let user else { throw DashboardRefusal.notSignedIn }
        return user
    }

    /// The posted form decoded as `Form`, strictly; ``SignedInRoutes`` asks, for its POST routes.
    func postedForm<Form: Decodable>(_ type: Form.Type = Form.self) throws -> Form {
        guard let form else { throw DashboardRefusal.unreadableForm }
        return try form.decode(type)
    }
}
