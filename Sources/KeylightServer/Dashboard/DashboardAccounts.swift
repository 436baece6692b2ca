import Foundation
import HummingbirdBcrypt
import KeylightCore
import NIOPosix

/// Dashboard accounts: bcrypt password hashes, and sign-in with throttling (an account locks
/// for a while after repeated failures; addresses are rate limited separately).
public struct DashboardAccounts: Sendable {
    let database: Database
    let clock: any WallClock
    /// bcrypt cost: about 0.2 s per check on a small server.
    var cost: UInt8 = 12
    /// Failures in a row that lock an account, and for how long.
    var lockThreshold = 5
    var lockSeconds: Int64 = 15 * 60

    public init(database: Database, clock: any WallClock = SystemWallClock()) {
        self.database = database
        self.clock = clock
    }

    /// Why an account could not be saved.
    public struct AccountError: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        public static let emailInvalid = AccountError(description: "That is not an email address.")
        public static let passwordTooShort = AccountError(description: "Passwords are at least 12 characters.")
        public static let passwordTooLong = AccountError(description: "Passwords are at most 72 bytes (bcrypt's limit).")
        public static let exists = AccountError(description: "A user with that email already exists (use --update to set a new password).")
    }

    /// Creates a user (or, with `replacing`, sets a new password for an existing one).
    public func createUser(email rawEmail: String, password: String, replacing: Bool = false, actor: Actor = .system) async throws -> DashboardUser {
        guard let email = try? Field.email(rawEmail.trimmingCharacters(in: .whitespaces)) else { throw AccountError.emailInvalid }
        guard password.count >= 12 else { throw AccountError.passwordTooShort }
        guard password.utf8.count <= 72 else { throw AccountError.passwordTooLong }
        let hash = try await hashPassword(password)
        let user = DashboardUser(
            id: UUID().uuidString.lowercased(), email: email, passwordHash: hash, failedLogins: 0, lockedUntil: 0,
            createdAt: clock.unixSeconds, lastLoginAt: nil
        )
        guard try await database.saveDashboardUser(user, replacing: replacing, actor: actor) else { throw AccountError.exists }
        return try await database.dashboardUser(email: email) ?? user
    }

    /// How a sign-in attempt ended.
    enum SignIn: Sendable, Equatable {
        case success(DashboardUser)
        case wrongCredentials
        /// Too many failures: the account is locked until then (unix seconds).
        case locked(until: Int64)
    }

    func signIn(email rawEmail: String, password: String) async throws -> SignIn {
        let email = rawEmail.trimmingCharacters(in: .whitespaces).lowercased()
        let now = clock.unixSeconds
        guard email.utf8.count <= 254, password.utf8.count <= 1_024, let user = try await database.dashboardUser(email: email) else {
            // Spend the same time as a real check, so timing does not tell which emails exist.
            _ = try await verify(password, hash: Self.decoyHash)
            return .wrongCredentials
        }
        if user.lockedUntil > now { return .locked(until: user.lockedUntil) }
        guard try await verify(password, hash: user.passwordHash) else {
            let updated = try await database.recordFailedLogin(userId: user.id, now: now, threshold: lockThreshold, lockFor: lockSeconds)
            if let updated, updated.lockedUntil > now { return .locked(until: updated.lockedUntil) }
            return .wrongCredentials
        }
        try await database.recordLogin(userId: user.id, now: now)
        return .success(user)
    }

    /// bcrypt is CPU-bound: run it on NIO's thread pool, off the request executors.
    private func hashPassword(_ password: String) async throws -> String {
        let cost = self.cost
        return try await NIOThreadPool.singleton.runIfActive { Bcrypt.hash(password, cost: cost) }
    }

    private func verify(_ password: String, hash: String) async throws -> Bool {
        try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(password, hash: hash) }
    }

    /// A valid cost-12 hash of a random string nobody knows.
    static let decoyHash = Bcrypt.hash(UUID().uuidString, cost: 12)
}
