/// `login.mustache`.
struct LoginView: Sendable {
    var chrome: Chrome
    var email: String?
    var next: String
}
