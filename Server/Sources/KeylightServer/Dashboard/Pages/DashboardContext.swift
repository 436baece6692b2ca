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
}

/// Who is signed in, for one request (set by ``DashboardAuthMiddleware``).
struct SignedInUser: Sendable {
    var email: String
    var csrf: String
    var actor: AuditActor { AuditActor("user:\(email)") }
}

/// The request context of `/dashboard` routes: the parent's storage plus the session. Only
/// dashboard requests pay for a session.
struct DashboardContext: ChildRequestContext, SessionRequestContext {
    var coreContext: CoreRequestContextStorage
    let sessions: SessionContext<DashboardSession>
    let rateLimitKey: IPAddress
    /// The signed-in user, on routes behind ``DashboardAuthMiddleware``.
    var user: SignedInUser?
    /// The posted form, read (bounded) and CSRF-checked by ``DashboardAuthMiddleware``.
    var form: DashboardForm?

    init(context: KeylightRequestContext) throws {
        coreContext = context.coreContext
        rateLimitKey = context.rateLimitKey
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
