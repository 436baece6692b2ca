import Crypto
import Foundation
import KeylightCore

/// Dashboard accounts: bcrypt password hashes, a second factor, and sign-in slowed down by
/// account and by address (``LoginThrottle``) rather than locked.
public struct DashboardAccounts: Sendable {
    let database: Database
    let clock: any WallClock
    let hasher: PasswordHasher
    /// Opens TOTP secrets; nil where no second factor is checked (the CLI).
    let sealer: SecretSealer?
    /// bcrypt cost: about 0.2 s per check on a small server.
    var cost: UInt8 = 12
    var throttle: LoginThrottle

    public init(database: Database, hasher: PasswordHasher, clock: any WallClock = SystemWallClock(), sealer: SecretSealer? = nil) {
        self.database = database
        self.hasher = hasher
        self.clock = clock
        self.sealer = sealer
        self.throttle = LoginThrottle(database: database)
    }

    /// Why an account could not be saved.
    public struct AccountError: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        public static let emailInvalid = AccountError(description: "That is not an email address.")
        public static let passwordTooShort = AccountError(description: "Passwords are at least 12 characters.")
        public static let passwordTooLong = AccountError(description: "Passwords are at most 72 bytes (bcrypt's limit).")
        public static let exists = AccountError(description: "A user with that email already exists (use --update to set a new password).")
        public static let notFound = AccountError(description: "No dashboard user has that email.")
        public static let lastOwner = AccountError(description: "That user is the last owner of a tenant (or of every tenant): make another owner first.")
    }

    /// Whether a session is live (not ended, not idle); marks it seen.
    func sessionIsLive(sid: String, userId: String, now: Int64, idleSince: Int64) async throws -> Bool {
        try await database.touchUserSession(sid: sid, userId: userId, now: now, idleSince: idleSince)
    }

    /// Whether a tenant the user belongs to requires a second factor.
    func twoFactorRequired(userId: String) async throws -> Bool {
        try await database.twoFactorRequired(userId: userId)
    }

    /// The user with `id`, or nil once deleted.
    func user(id: String) async throws -> DashboardUser? { try await database.dashboardUser(id: id) }

    /// Deletes a user; their sessions stop working at once (each request re-checks its user).
    /// The last owner of a tenant, or of every tenant, is not deleted.
    public func deleteUser(email rawEmail: String, actor: AuditActor = .system) async throws {
        let email = rawEmail.trimmingCharacters(in: .whitespaces).lowercased()
        do {
            guard try await database.deleteDashboardUser(email: email, now: clock.unixSeconds, actor: actor) else { throw AccountError.notFound }
        } catch TeamChangeError.lastOwner {
            throw AccountError.lastOwner
        }
    }

    /// Gives a user a role in a tenant, or (`tenantId` nil) in every tenant; nil `role` removes
    /// them from it (`keylight admin set-role`). The last owner keeps their role.
    public func setRole(email rawEmail: String, tenantId: String?, role: Role?, actor: AuditActor = .system) async throws {
        let email = rawEmail.trimmingCharacters(in: .whitespaces).lowercased()
        guard let user = try await database.dashboardUser(email: email) else { throw AccountError.notFound }
        let scope = tenantId ?? Membership.everyTenant
        do {
            if let role {
                try await database.setMembership(userId: user.id, email: email, tenantId: scope, role: role, now: clock.unixSeconds, actor: actor)
            } else {
                try await database.removeMembership(userId: user.id, email: email, tenantId: scope, now: clock.unixSeconds, actor: actor)
            }
        } catch TeamChangeError.lastOwner {
            throw AccountError.lastOwner
        } catch TeamChangeError.notFound {
            throw AccountError(description: "\(email) has no role there.")
        }
    }

    /// Turns off a user's second factor and ends their sessions (`keylight admin reset-2fa`).
    public func resetTwoFactor(email rawEmail: String, actor: AuditActor = .system) async throws {
        let email = rawEmail.trimmingCharacters(in: .whitespaces).lowercased()
        guard let user = try await database.dashboardUser(email: email),
              try await database.resetTwoFactor(userId: user.id, email: email, now: clock.unixSeconds, actor: actor) else { throw AccountError.notFound }
    }

    /// Creates a user (or, with `replacing`, sets a new password for an existing one). A new
    /// user gets `membership`: by default, owner of every tenant (the CLI on the server's machine
    /// makes the server's owners).
    public func createUser(
        email rawEmail: String, password: String, replacing: Bool = false,
        membership: (tenantId: String, role: Role)? = (Membership.everyTenant, .owner), actor: AuditActor = .system
    ) async throws -> DashboardUser {
        guard let email = try? Field.email(rawEmail.trimmingCharacters(in: .whitespaces)) else { throw AccountError.emailInvalid }
        guard password.count >= 12 else { throw AccountError.passwordTooShort }
        guard password.utf8.count <= 72 else { throw AccountError.passwordTooLong }
        let hash = try await hasher.hash(password, cost: cost)
        let user = DashboardUser(
            id: UUID().uuidString.lowercased(), email: email, passwordHash: hash, failedLogins: 0, lockedUntil: 0,
            createdAt: clock.unixSeconds, lastLoginAt: nil
        )
        guard try await database.saveDashboardUser(user, replacing: replacing, membership: membership, actor: actor) else { throw AccountError.exists }
        return try await database.dashboardUser(email: email) ?? user
    }

    /// How a sign-in attempt ended. An unknown email answers exactly like a wrong password (the
    /// same status and page, after the same bcrypt time), and slowing down is by the email typed,
    /// so no answer tells which emails exist.
    enum SignIn: Sendable, Equatable {
        /// Signed in (with the second factor, when the user has one).
        case success(DashboardUser)
        /// The password was right; the user's second factor is still to come.
        case needsSecondFactor(DashboardUser)
        case wrongCredentials
        /// Too many failures lately, by account or address: try again after this many seconds
        /// (or now, with the second factor).
        case slowedDown(seconds: Int64)
    }

    func signIn(email rawEmail: String, password: String, code: String? = nil, origin: RequestOrigin = RequestOrigin(), step: String = "password") async throws -> SignIn {
        let result = try await checkSignIn(email: rawEmail, password: password, code: code, origin: origin)
        try await audit(result, email: rawEmail, origin: origin, step: step)
        return result
    }

    private func checkSignIn(email rawEmail: String, password: String, code: String?, origin: RequestOrigin) async throws -> SignIn {
        let address = origin.address
        let email = rawEmail.trimmingCharacters(in: .whitespaces).lowercased()
        let now = clock.unixSeconds
        guard email.utf8.count <= 254, password.utf8.count <= 1_024 else {
            _ = try await hasher.verifyDecoy(password)
            return .wrongCredentials
        }
        let device = DeviceCookie.throttleKey(origin.device, email: email, now: now, sealer: sealer)
        let keys = LoginThrottle.keys(email: email, address: address, device: device)
        let waits = try await throttle.begin(keys: keys, now: now)
        if let wait = waits.longest {
            // Slowed down by account only: the right password with a valid second factor still
            // gets in, so a guesser elsewhere cannot keep the owner out. Codes tried this way
            // count on the account's code throttle; the code is checked only behind the right
            // password (no code is used up by a wrong one); every failure answers the same, after
            // the same bcrypt time, so a guesser learns nothing.
            guard waits.address == nil, let code, !code.isEmpty else { return .slowedDown(seconds: wait) }
            let codeKey = LoginThrottle.codeKey(email: email)
            guard try await throttle.begin(keys: [codeKey], now: now).longest == nil else { return .slowedDown(seconds: wait) }
            guard let user = try await database.dashboardUser(email: email), user.hasTwoFactor else {
                _ = try await hasher.verifyDecoy(password)
                return .slowedDown(seconds: wait)
            }
            guard try await hasher.verify(password, hash: user.passwordHash),
                  try await verifySecondFactor(user, code: code, actor: actor(user, address)) else { return .slowedDown(seconds: wait) }
            try await signedIn(user, keys: keys + [codeKey], now: now)
            return .success(user)
        }
        guard let user = try await database.dashboardUser(email: email) else {
            _ = try await hasher.verifyDecoy(password)
            return .wrongCredentials
        }
        guard try await hasher.verify(password, hash: user.passwordHash) else { return .wrongCredentials }
        if user.hasTwoFactor {
            guard let code, !code.isEmpty else {
                try await throttle.passed(keys: keys)
                return .needsSecondFactor(user)
            }
            guard try await verifySecondFactor(user, code: code, actor: actor(user, address)) else { return .wrongCredentials }
        }
        try await signedIn(user, keys: keys, now: now)
        return .success(user)
    }

    /// The second step of a sign-in whose password was right: the code, counted against the
    /// same throttle as passwords.
    func completeSecondFactor(userId: String, code: String, origin: RequestOrigin) async throws -> SignIn {
        let result = try await checkSecondFactor(userId: userId, code: code, origin: origin)
        if let user = try await database.dashboardUser(id: userId) { try await audit(result, email: user.email, origin: origin, step: "second_factor") }
        return result
    }

    private func checkSecondFactor(userId: String, code: String, origin: RequestOrigin) async throws -> SignIn {
        let address = origin.address
        guard let user = try await database.dashboardUser(id: userId), user.hasTwoFactor else { return .wrongCredentials }
        let now = clock.unixSeconds
        let keys = LoginThrottle.keys(email: user.email, address: address, device: DeviceCookie.throttleKey(origin.device, email: user.email, now: now, sealer: sealer))
        if let wait = try await throttle.begin(keys: keys, now: now).longest { return .slowedDown(seconds: wait) }
        guard try await verifySecondFactor(user, code: code, actor: actor(user, address)) else { return .wrongCredentials }
        try await signedIn(user, keys: keys, now: now)
        return .success(user)
    }

    /// Checks a TOTP code (each time step once) or an unused recovery code (used up here).
    func verifySecondFactor(_ user: DashboardUser, code: String, actor: AuditActor) async throws -> Bool {
        guard let sealer, let sealed = user.totpSecret, user.totpEnabledAt != nil, code.utf8.count <= 64 else { return false }
        if TwoFactor.isRecoveryCode(code) {
            return try await database.useRecoveryCode(userId: user.id, email: user.email, hash: TwoFactor.recoveryCodeHash(code), now: clock.unixSeconds, actor: actor)
        }
        let secret = String(decoding: try sealer.open(sealed, context: TwoFactor.sealContext(userId: user.id)), as: UTF8.self)
        guard let step = TwoFactor(clock: clock).matchingStep(code, secret: secret) else { return false }
        return try await database.useTOTPStep(userId: user.id, step: step)
    }

    /// Records a sign-in made otherwise than through ``signIn`` (a new member accepting an invitation).
    func recordSignIn(userId: String) async throws {
        try await database.recordLogin(userId: userId, now: clock.unixSeconds)
    }

    private func signedIn(_ user: DashboardUser, keys: [String], now: Int64) async throws {
        try await throttle.succeeded(keys: keys)
        try await database.recordLogin(userId: user.id, now: now)
    }

    /// Sign-ins, failures and slow-downs go into the audit log, with the address and user agent.
    private func audit(_ result: SignIn, email rawEmail: String, origin: RequestOrigin, step: String = "password") async throws {
        let email = String(rawEmail.trimmingCharacters(in: .whitespaces).lowercased().prefix(254))
        let action: String, userId: String?
        var details = ["step": step]
        switch result {
        case .success(let user): (action, userId) = ("sign_in", user.id)
        case .needsSecondFactor(let user): (action, userId) = ("sign_in.password_ok", user.id)
        case .wrongCredentials: (action, userId) = ("sign_in.failed", nil)
        case .slowedDown(let seconds): (action, userId) = ("sign_in.slowed_down", nil); details["wait_seconds"] = String(seconds)
        }
        let actor = AuditActor(name: "user:\(email)", kind: .user, id: userId, address: origin.address, userAgent: origin.userAgent)
        try await database.auditSignIn(action: action, actor: actor, email: email, now: clock.unixSeconds, details: details)
    }

    private func actor(_ user: DashboardUser, _ address: String?) -> AuditActor {
        AuditActor(name: "user:\(user.email)", kind: .user, id: user.id, address: address)
    }

    /// What a session remembers of its user's credentials: a password reset or a deleted user
    /// changes it, which ends every session made before.
    static func credentialStamp(_ user: DashboardUser) -> String {
        Hex.encode(SHA256.hash(data: Data(("keylight-session:" + user.id + ":" + user.passwordHash).utf8)).prefix(16))
    }
}

/// Where a request came from, for the audit log and throttling.
struct RequestOrigin: Sendable {
    var address: String?
    var userAgent: String?
    /// The browser's ``DeviceCookie``, on sign-in.
    var device: String? = nil
}
