import Foundation
import KeylightCore

/// The dashboard user's own account: the session list and the second factor.
extension AdminService {
    func startSession(sid: String, userId: String, origin: RequestOrigin) async throws {
        let now = clock.unixSeconds
        try await database.createUserSession(UserSession(sid: sid, userId: userId, createdAt: now, lastSeenAt: now, address: origin.address, userAgent: origin.userAgent))
    }

    func userSessions(userId: String, idleTimeout: Int64) async throws -> [UserSession] {
        try await database.userSessions(userId: userId, idleSince: clock.unixSeconds - idleTimeout)
    }

    /// Ends one of the user's own sessions; false when it is not theirs or already ended.
    func endSession(sid: String, userId: String, actor: AuditActor) async throws -> Bool {
        try await database.endUserSession(sid: sid, userId: userId, now: clock.unixSeconds, actor: actor)
    }

    func dashboardUserExists(email: String) async throws -> Bool {
        try await database.dashboardUser(email: email) != nil
    }

    func dashboardUser(id: String) async throws -> DashboardUser? {
        try await database.dashboardUser(id: id)
    }

    /// Starts enrolling a second factor: a new secret, kept sealed until the first code proves
    /// the authenticator has it. Answers the secret (shown once, as a QR code and as text).
    func beginTwoFactor(user: DashboardUser) async throws -> String {
        guard !user.hasTwoFactor else { throw APIError.conflict("A second factor is already set up; turn it off first to set up another.") }
        var random = SystemRandomNumberGenerator()
        let secret = TwoFactor.newSecret(using: &random)
        try await database.setPendingTOTPSecret(userId: user.id, sealed: try sealer.seal(Data(secret.utf8), context: TwoFactor.sealContext(userId: user.id)))
        return secret
    }

    /// The secret being enrolled, opened (to show it again after a wrong first code).
    func pendingTwoFactorSecret(user: DashboardUser) throws -> String? {
        guard !user.hasTwoFactor, let sealed = user.totpSecret else { return nil }
        return String(decoding: try sealer.open(sealed, context: TwoFactor.sealContext(userId: user.id)), as: UTF8.self)
    }

    /// Turns the second factor on when `code` matches the pending secret; answers the ten
    /// recovery codes (shown once), or nil for a wrong code.
    func enableTwoFactor(user: DashboardUser, code: String, actor: AuditActor) async throws -> [String]? {
        guard let secret = try pendingTwoFactorSecret(user: user), let step = TwoFactor(clock: clock).matchingStep(code, secret: secret) else { return nil }
        var random = SystemRandomNumberGenerator()
        let codes = TwoFactor.newRecoveryCodes(using: &random)
        guard try await database.enableTOTP(
            userId: user.id, email: user.email, step: step, recoveryCodeHashes: codes.map(TwoFactor.recoveryCodeHash), now: clock.unixSeconds, actor: actor
        ) else { return nil }
        return codes
    }

    func newRecoveryCodes(user: DashboardUser, actor: AuditActor) async throws -> [String] {
        guard user.hasTwoFactor else { throw APIError.conflict("Set up a second factor first.") }
        var random = SystemRandomNumberGenerator()
        let codes = TwoFactor.newRecoveryCodes(using: &random)
        try await database.regenerateRecoveryCodes(userId: user.id, email: user.email, hashes: codes.map(TwoFactor.recoveryCodeHash), now: clock.unixSeconds, actor: actor)
        return codes
    }

    func unusedRecoveryCodes(userId: String) async throws -> Int {
        try await database.unusedRecoveryCodes(userId: userId)
    }

    /// Turns the user's own second factor off (it ends their sessions), unless a tenant of
    /// theirs requires one.
    func disableTwoFactor(user: DashboardUser, actor: AuditActor) async throws {
        if try await database.twoFactorRequired(userId: user.id) {
            throw APIError.conflict("A tenant you belong to requires a second factor: it cannot be turned off.")
        }
        _ = try await database.resetTwoFactor(userId: user.id, email: user.email, now: clock.unixSeconds, actor: actor)
    }
}
