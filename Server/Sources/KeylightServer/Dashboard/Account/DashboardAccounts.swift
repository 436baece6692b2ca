import Crypto
import Foundation
import KeylightCore

/// Dashboard accounts: bcrypt password hashes, and sign-in with throttling (an account locks
/// for a while after repeated failures; addresses are rate limited separately).
public struct DashboardAccounts: Sendable {
    let database: Database
    let clock: any WallClock
    let hasher: PasswordHasher
    /// bcrypt cost: about 0.2 s per check on a small server.
    var cost: UInt8 = 12
    /// Failures in a row that lock an account, and for how long.
    var lockThreshold = 5
    var lockSeconds: Int64 = 15 * 60

    public init(database: Database, hasher: PasswordHasher, clock: any WallClock = SystemWallClock()) {
        self.database = database
        self.hasher = hasher
        self.clock = clock
    }

    /// Why an account could not be saved.
    public struct AccountError: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        public static let emailInvalid = AccountError(description: "That is not an email address.")
        public static let passwordTooShort = AccountError(description: "Passwords are at least 12 characters.")
        public static let passwordTooLong = AccountError(description: "Passwords are at most 72 bytes (bcrypt's limit).")
        public static let exists = AccountError(description: "A user with that email already exists (use --update to set a new password).")
        public static let notFound = AccountError(description: "No dashboard user has that email.")
    }

    /// The user with `id`, or nil once deleted.
    func user(id: String) async throws -> DashboardUser? { try await database.dashboardUser(id: id) }

    /// Deletes a user; their sessions stop working at once (each request re-checks its user).
    public func deleteUser(email rawEmail: String, actor: AuditActor = .system) async throws {
        let email = rawEmail.trimmingCharacters(in: .whitespaces).lowercased()
        guard try await database.deleteDashboardUser(email: email, now: clock.unixSeconds, actor: actor) else { throw AccountError.notFound }
    }

    /// Creates a user (or, with `replacing`, sets a new password for an existing one).
    public func createUser(email rawEmail: String, password: String, replacing: Bool = false, actor: AuditActor = .system) async throws -> DashboardUser {
        guard let email = try? Field.email(rawEmail.trimmingCharacters(in: .whitespaces)) else { throw AccountError.emailInvalid }
        guard password.count >= 12 else { throw AccountError.passwordTooShort }
        guard password.utf8.count <= 72 else { throw AccountError.passwordTooLong }
        let hash = try await hasher.hash(password, cost: cost)
        let user = DashboardUser(
            id: UUID().uuidString.lowercased(), email: email, passwordHash: hash, failedLogins: 0, lockedUntil: 0,
            createdAt: clock.unixSeconds, lastLoginAt: nil
        )
        guard try await database.saveDashboardUser(user, replacing: replacing, actor: actor) else { throw AccountError.exists }
        return try await database.dashboardUser(email: email) ?? user
    }

    /// How a sign-in attempt ended. A locked account answers exactly like a wrong password (the
    /// same status and page, after the same bcrypt time), so no answer tells which emails exist.
    enum SignIn: Sendable, Equatable {
        case success(DashboardUser)
        case wrongCredentials
    }

    func signIn(email rawEmail: String, password: String) async throws -> SignIn {
        let email = rawEmail.trimmingCharacters(in: .whitespaces).lowercased()
        let now = clock.unixSeconds
        // The attempt is counted before the password is checked, in one statement: parallel
        // attempts cannot all slip past the lock before the counter moves.
        guard email.utf8.count <= 254, password.utf8.count <= 1_024,
              let user = try await database.beginLoginAttempt(email: email, now: now, threshold: lockThreshold, lockFor: lockSeconds) else {
            // Unknown or locked: spend the same time as a real check.
            _ = try await hasher.verifyDecoy(password)
            return .wrongCredentials
        }
        guard try await hasher.verify(password, hash: user.passwordHash) else { return .wrongCredentials }
        try await database.recordLogin(userId: user.id, now: now)
        return .success(user)
    }

    /// What a session remembers of its user's credentials: a password reset or a deleted user
    /// changes it, which ends every session made before.
    static func credentialStamp(_ user: DashboardUser) -> String {
        Hex.encode(SHA256.hash(data: Data(("keylight-session:" + user.id + ":" + user.passwordHash).utf8)).prefix(16))
    }
}
