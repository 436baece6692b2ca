import HTTPTypes

/// Why the dashboard turned a request away before it reached its handler. Rendered as an
/// error page (never a flash): nothing was changed.
struct DashboardRefusal: Error, Sendable, Equatable {
    var status: HTTPResponse.Status
    var message: String

    static let formTooLarge = Self(status: .contentTooLarge, message: "That form was larger than 64 KiB.")
    static let unreadableForm = Self(status: .badRequest, message: "That form could not be read; nothing was changed. Reload the page and try again.")
    /// A field the form does not have (a hand-made or tampered request): refused by name.
    static func unknownField(_ name: String) -> Self {
        Self(status: .badRequest, message: "This form has no field \(name) (UNKNOWN_FIELD); nothing was changed.")
    }
    static let foreignForm = Self(
        status: .forbidden,
        message: "This form has expired or did not come from this dashboard; nothing was changed. Reload the page and try again."
    )
    /// A route behind the sign-in check ran without it (a wiring mistake, not a visitor's).
    static let notSignedIn = Self(status: .internalServerError, message: "Something went wrong; nothing you asked for was half-done. Try again.")
}
