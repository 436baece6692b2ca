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

/// The request context of `/dashboard` routes: the parent's storage plus the session, with
/// form bodies decoded as `application/x-www-form-urlencoded`. Only dashboard requests pay for
/// a session.
struct DashboardContext: ChildRequestContext, SessionRequestContext {
    var coreContext: CoreRequestContextStorage
    let sessions: SessionContext<DashboardSession>
    let rateLimitKey: IPAddress

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
}
