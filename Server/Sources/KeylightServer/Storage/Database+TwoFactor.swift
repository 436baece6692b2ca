import SQLKit

/// The dashboard's second factor: a TOTP secret (sealed) and ten single-use recovery codes
/// (kept as hashes).
extension Database {
    /// Starts enrolling: the secret is kept, not yet asked for at sign-in.
    func setPendingTOTPSecret(userId: String, sealed: String) async throws {
        try await write { db in
            try await db.raw("""
                UPDATE dashboard_users SET totp_secret = \(bind: sealed) WHERE id = \(bind: userId) AND totp_enabled_at IS NULL
                """).run()
        }
    }

    /// Turns the second factor on (the first code proved the authenticator has the secret), with
    /// a fresh set of recovery codes.
    func enableTOTP(userId: String, email: String, step: Int64, recoveryCodeHashes: [String], now: Int64, actor: AuditActor) async throws -> Bool {
        try await write { db in
            guard try await db.raw("""
                UPDATE dashboard_users SET totp_enabled_at = \(bind: now), totp_last_step = \(bind: step)
                WHERE id = \(bind: userId) AND totp_enabled_at IS NULL AND totp_secret IS NOT NULL RETURNING id
                """).first() != nil else { return false }
            try await Self.replaceRecoveryCodes(db, userId: userId, hashes: recoveryCodeHashes)
            try await Self.audit(db, at: now, actor: actor, action: "two_factor.enable", tenantId: nil, target: email)
            return true
        }
    }

    /// Accepts a TOTP time step once: false when it (or a later one) was used already.
    func useTOTPStep(userId: String, step: Int64) async throws -> Bool {
        try await write { db in
            try await db.raw("""
                UPDATE dashboard_users SET totp_last_step = \(bind: step)
                WHERE id = \(bind: userId) AND (totp_last_step IS NULL OR totp_last_step < \(bind: step)) RETURNING id
                """).first() != nil
        }
    }

    /// Uses a recovery code once (audited); false when it is not one of the user's unused codes.
    func useRecoveryCode(userId: String, email: String, hash: String, now: Int64, actor: AuditActor) async throws -> Bool {
        try await write { db in
            guard try await db.raw("""
                UPDATE dashboard_recovery_codes SET used_at = \(bind: now)
                WHERE user_id = \(bind: userId) AND code_hash = \(bind: hash) AND used_at IS NULL RETURNING user_id
                """).first() != nil else { return false }
            try await Self.audit(db, at: now, actor: actor, action: "two_factor.recovery_code_used", tenantId: nil, target: email)
            return true
        }
    }

    func unusedRecoveryCodes(userId: String) async throws -> Int {
        try await sql.raw("""
            SELECT COUNT(*) AS n FROM dashboard_recovery_codes WHERE user_id = \(bind: userId) AND used_at IS NULL
            """).first(decodingColumn: "n", as: Int.self) ?? 0
    }

    func regenerateRecoveryCodes(userId: String, email: String, hashes: [String], now: Int64, actor: AuditActor) async throws {
        try await write { db in
            try await Self.replaceRecoveryCodes(db, userId: userId, hashes: hashes)
            try await Self.audit(db, at: now, actor: actor, action: "two_factor.recovery_codes", tenantId: nil, target: email)
        }
    }

    /// Turns the second factor off and ends every session of the user (audited): the user's own
    /// choice, or `keylight admin reset-2fa` for a lost authenticator. False: no such user.
    func resetTwoFactor(userId: String, email: String, now: Int64, actor: AuditActor) async throws -> Bool {
        try await write { db in
            guard try await db.raw("""
                UPDATE dashboard_users SET totp_secret = NULL, totp_enabled_at = NULL, totp_last_step = NULL WHERE id = \(bind: userId) RETURNING id
                """).first() != nil else { return false }
            try await db.raw("DELETE FROM dashboard_recovery_codes WHERE user_id = \(bind: userId)").run()
            try await Self.endAllUserSessions(db, userId: userId, now: now)
            try await Self.audit(db, at: now, actor: actor, action: "two_factor.reset", tenantId: nil, target: email)
            return true
        }
    }

    private static func replaceRecoveryCodes(_ db: any SQLDatabase, userId: String, hashes: [String]) async throws {
        try await db.raw("DELETE FROM dashboard_recovery_codes WHERE user_id = \(bind: userId)").run()
        for hash in hashes {
            try await db.raw("""
                INSERT INTO dashboard_recovery_codes (user_id, code_hash, used_at) VALUES (\(bind: userId), \(bind: hash), NULL)
                """).run()
        }
    }
}
