// What every template sees. Mustache reads stored properties through reflection, so view
// models are plain structs of strings, numbers, optionals (nil hides a section) and arrays;
// each lives beside the template that renders it.

/// What every page's layout (`layout.mustache`) needs.
struct Chrome: Sendable {
    var title: String
    var email: String?
    var csrf: String
    var flash: String?
    var error: String?
    /// Which top-level section is current (Mustache reads stored properties only).
    var tenantsNav: Bool
    var keysNav: Bool
    var auditNav: Bool
    var accountNav: Bool
    /// The signed-in user's role shows these sections at all (the routes check again).
    var showKeys: Bool = false
    var showAudit: Bool = false

    init(title: String, email: String?, csrf: String, flash: String? = nil, error: String? = nil, section: DashboardSection = .tenants) {
        self.title = title
        self.email = email
        self.csrf = csrf
        self.flash = flash
        self.error = error
        tenantsNav = section == .tenants
        keysNav = section == .signingKeys
        auditNav = section == .audit
        accountNav = section == .account
    }
}

/// The dashboard's top-level sections (the navigation bar).
enum DashboardSection: Sendable {
    case tenants, signingKeys, audit, account
}

/// `error.mustache`.
struct ErrorView: Sendable {
    var chrome: Chrome
    var status: Int
    var message: String
    var back: String
}
