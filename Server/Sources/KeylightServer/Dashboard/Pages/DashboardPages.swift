import HTTPTypes
import Hummingbird

/// What every dashboard controller renders with: templates, the page chrome, flash messages
/// and error pages.
struct DashboardPages: Sendable {
    let renderer: DashboardRenderer

    func page(_ template: String, _ view: Any, status: HTTPResponse.Status = .ok) -> Response {
        renderer.page(template, view, status: status)
    }

    /// The page chrome, taking (and clearing) the session's one-time messages. `csrf` is for
    /// pages without a signed-in user (the sign-in form's own token).
    func chrome(_ title: String, _ context: DashboardContext, section: DashboardSection = .tenants, csrf: String? = nil) -> Chrome {
        let current = context.sessions.session
        if current?.flash != nil || current?.flashError != nil {
            context.sessions.withLockedSession { data in
                data?.flash = nil
                data?.flashError = nil
            }
        }
        var chrome = Chrome(
            title: title, email: context.user?.email, csrf: csrf ?? context.user?.csrf ?? current?.csrf ?? "",
            flash: current?.flash, error: current?.flashError, section: section
        )
        let grants = context.user?.principal.grants ?? []
        chrome.showKeys = grants.contains { $0.permissions.contains(.signingKeysRead) }
        chrome.showAudit = grants.contains { $0.productId == nil && $0.permissions.contains(.auditRead) }
        return chrome
    }

    /// A message for the next page (shown after the redirect that follows a form).
    func flash(_ context: DashboardContext, _ message: String) {
        context.sessions.withLockedSession { $0?.flash = message }
    }

    func flash(_ context: DashboardContext, error message: String) {
        context.sessions.withLockedSession { $0?.flashError = message }
    }

    func errorPage(_ context: DashboardContext, status: HTTPResponse.Status, _ message: String, back: String) -> Response {
        let session = context.sessions.session
        let view = ErrorView(
            chrome: Chrome(title: "Error \(status.code)", email: session?.email, csrf: session?.csrf ?? ""),
            status: status.code, message: message, back: back
        )
        return renderer.page("error", view, status: status)
    }
}
