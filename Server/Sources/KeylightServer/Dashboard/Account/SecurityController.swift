import Foundation
import Hummingbird
import KeylightQR

/// The signed-in user's own account: the second factor (set up with a QR code, ten recovery
/// codes shown once), the sessions signed in (each can be ended), and confirming the password
/// (and code) before a dangerous action.
struct SecurityController: Sendable {
    let dashboard: DashboardRoutes
    var admin: AdminService { dashboard.admin }
    var pages: DashboardPages { dashboard.pages }
    static let page = "/dashboard/account"

    struct CodeForm: Decodable {
        @FormText var code: String?
    }

    struct ConfirmForm: Decodable {
        var password: String?
        @FormText var code: String?
        @FormText var next: String?
        enum CodingKeys: String, CodingKey { case password, code, next }
    }

    func register(on group: RouterGroup<DashboardContext>) {
        let account = group.signedIn("/account", dashboard: dashboard, back: { _ in Self.page })
        account.get(access: .ownAccount) { _, context -> Response in
            pages.page("security", try await view(context))
        }
        // Setting up a second factor asks for the password first too: a stolen session must not
        // enrol its own authenticator (and take the recovery codes).
        account.post("/two-factor/start", access: .ownAccount) { _, context -> Response in
            if let confirm = needsConfirmation(context) { return confirm }
            _ = try await admin.beginTwoFactor(user: try await currentUser(context))
            return .redirect(to: Self.page)
        }
        account.post("/two-factor/enable", access: .ownAccount, form: CodeForm.self) { form, _, context -> Response in
            if let confirm = needsConfirmation(context) { return confirm }
            let user = try await currentUser(context)
            guard let codes = try await admin.enableTwoFactor(user: user, code: form.code ?? "", actor: try context.requireUser().actor) else {
                pages.flash(context, error: "That code is not right. Check the time on your phone, and type the code it shows now.")
                return .redirect(to: Self.page)
            }
            var view = try await view(context)
            view.recoveryCodes = RecoveryCodes(codes: codes)
            view.chrome.flash = "Second factor on. Keep the recovery codes below somewhere safe: they are shown once."
            return pages.page("security", view)
        }
        account.post("/two-factor/recovery-codes", access: .ownAccount) { _, context -> Response in
            if let confirm = needsConfirmation(context) { return confirm }
            let codes = try await admin.newRecoveryCodes(user: try await currentUser(context), actor: try context.requireUser().actor)
            var view = try await view(context)
            view.recoveryCodes = RecoveryCodes(codes: codes)
            view.chrome.flash = "New recovery codes; the old ones no longer work."
            return pages.page("security", view)
        }
        account.post("/two-factor/disable", access: .ownAccount) { _, context -> Response in
            if let confirm = needsConfirmation(context) { return confirm }
            try await admin.disableTwoFactor(user: try await currentUser(context), actor: try context.requireUser().actor)
            context.sessions.clearSession()
            return .redirect(to: "/dashboard/login")
        }
        account.post("/sessions/:sid/end", access: .ownAccount) { _, context -> Response in
            let user = try context.requireUser()
            let sid = try context.parameters.require("sid")
            guard try await admin.endSession(sid: sid, userId: user.id, actor: user.actor) else { throw APIError.notFound("Session") }
            if sid == user.sid {
                context.sessions.clearSession()
                return .redirect(to: "/dashboard/login")
            }
            pages.flash(context, "Session ended.")
            return .redirect(to: Self.page)
        }
        account.get("/confirm", access: .ownAccount) { request, context -> Response in
            pages.page("credentials", try await confirmView(context, next: AccountController.safeNext(request.uri.queryParameters.get("next"))))
        }
        account.post("/confirm", access: .ownAccount, form: ConfirmForm.self) { form, request, context -> Response in
            let user = try context.requireUser()
            let next = AccountController.safeNext(form.next)
            let origin = RequestOrigin(address: context.client.map { "\($0)" }, userAgent: request.headers[.userAgent], device: request.cookies[DeviceCookie.name]?.value)
            switch try await dashboard.accounts.signIn(email: user.email, password: form.password ?? "", code: form.code, origin: origin, step: "confirm") {
            case .success:
                context.sessions.withLockedSession { $0?.confirmedAt = admin.clock.unixSeconds }
                return .redirect(to: next)
            case .needsSecondFactor, .wrongCredentials:
                var view = try await confirmView(context, next: next)
                view.chrome.error = "Wrong password or code."
                return pages.page("credentials", view, status: .unauthorized)
            case .slowedDown(let seconds):
                var view = try await confirmView(context, next: next)
                view.chrome.error = "Too many failed attempts: try again in \(seconds) seconds."
                return pages.page("credentials", view, status: .tooManyRequests)
            }
        }
    }

    private func currentUser(_ context: DashboardContext) async throws -> DashboardUser {
        guard let user = try await admin.dashboardUser(id: try context.requireUser().id) else { throw DashboardRefusal.notSignedIn }
        return user
    }

    /// Own-account actions that weaken sign-in ask for a fresh confirmation too.
    private func needsConfirmation(_ context: DashboardContext) -> Response? {
        guard (context.sessions.session?.confirmedAt ?? 0) < admin.clock.unixSeconds - SignedInRoutes.confirmationWindow else { return nil }
        pages.flash(context, error: "Confirm it is you first, then send the form again.")
        return .redirect(to: "/dashboard/account/confirm?" + FormEncoding.encode([("next", Self.page)]))
    }

    private func confirmView(_ context: DashboardContext, next: String) async throws -> CredentialsView {
        let user = try await currentUser(context)
        return CredentialsView(
            chrome: pages.chrome("Confirm it is you", context, section: .account), heading: "Confirm it is you",
            intro: "This action changes who can do what, or shows a secret. Type your password\(user.hasTwoFactor ? " and the code from your authenticator" : "") again.",
            action: "/dashboard/account/confirm", next: next,
            fields: [CredentialField(name: "password", label: "Password", type: "password", autocomplete: "current-password")]
                + (user.hasTwoFactor ? [CredentialField(name: "code", label: "Code", type: "text", autocomplete: "one-time-code", inputmode: "numeric")] : []),
            button: "Confirm"
        )
    }

    private func view(_ context: DashboardContext) async throws -> SecurityView {
        let signedIn = try context.requireUser()
        let user = try await currentUser(context)
        var setup: TwoFactorSetup?
        if let secret = try admin.pendingTwoFactorSecret(user: user) {
            let url = TwoFactor.authenticatorURL(secret: secret, email: user.email, issuer: "Keylight")
            setup = TwoFactorSetup(qr: QRRenderer(scale: 4).svg(try QRCode(text: url)), typed: TwoFactor.typedSecret(secret), url: url)
        }
        let sessions = try await admin.userSessions(userId: user.id, idleTimeout: dashboard.idleTimeout)
        return SecurityView(
            chrome: pages.chrome("Account", context, section: .account),
            email: user.email, twoFactorOn: user.hasTwoFactor, setup: setup,
            unusedRecoveryCodes: user.hasTwoFactor ? try await admin.unusedRecoveryCodes(userId: user.id) : 0,
            recoveryCodes: nil,
            sessions: sessions.map { SessionRow($0, current: $0.sid == signedIn.sid) },
            idleMinutes: Int(dashboard.idleTimeout / 60)
        )
    }
}

/// `security.mustache`.
struct SecurityView: Sendable {
    var chrome: Chrome
    var email: String
    var twoFactorOn: Bool
    /// While setting up: the secret as a QR code, as text, and as the URL.
    var setup: TwoFactorSetup?
    var unusedRecoveryCodes: Int
    /// Shown once, right after they were made.
    var recoveryCodes: RecoveryCodes?
    var sessions: [SessionRow]
    var idleMinutes: Int
}

struct RecoveryCodes: Sendable {
    var codes: [String]
}

struct TwoFactorSetup: Sendable {
    /// An SVG made here from the URL (rendered unescaped).
    var qr: String
    var typed: String
    var url: String
}

struct SessionRow: Sendable {
    var sid: String
    var started: String
    var lastSeen: String
    var address: String
    var userAgent: String
    var current: Bool

    init(_ session: UserSession, current: Bool) {
        sid = session.sid
        started = DashboardFormat.time(session.createdAt)
        lastSeen = DashboardFormat.time(session.lastSeenAt)
        address = session.address ?? "—"
        userAgent = String((session.userAgent ?? "—").prefix(120))
        self.current = current
    }
}
