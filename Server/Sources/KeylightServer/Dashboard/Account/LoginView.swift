/// `login.mustache`.
struct LoginView: Sendable {
    var chrome: Chrome
    var email: String?
    var next: String
    /// Sign-in is slowed down: the form takes the second factor, which lets the owner in now.
    var askCode: Bool = false
}

/// `credentials.mustache`: a form that asks for a password, a code or both (the second
/// factor, confirming before a dangerous action, accepting an invitation).
struct CredentialsView: Sendable {
    var chrome: Chrome
    var heading: String
    var intro: String
    var action: String
    var next: String?
    var fields: [CredentialField]
    var button: String
}

struct CredentialField: Sendable {
    var name: String
    var label: String
    var type: String
    var autocomplete: String
    var required: Bool = true
    var inputmode: String? = nil
}
