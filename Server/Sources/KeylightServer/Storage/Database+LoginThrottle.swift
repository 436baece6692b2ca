import SQLKit

extension Database {
    /// A throttle's failures and when the next attempt may come, or nil for none.
    func loginThrottle(key: String) async throws -> (failures: Int, nextAllowedAt: Int64, updatedAt: Int64)? {
        guard let row = try await sql.raw("""
            SELECT failures, next_allowed_at, updated_at FROM login_throttle WHERE key = \(bind: key)
            """).first() else { return nil }
        return (try row.decode(column: "failures", as: Int.self), try row.decode(column: "next_allowed_at", as: Int64.self),
                try row.decode(column: "updated_at", as: Int64.self))
    }

    /// Counts an attempt against a throttle if it still has `failures` (the value read): false
    /// when another attempt counted first, which the caller treats as throttled. So parallel
    /// guesses cannot all slip through one open moment.
    func countLoginAttempt(key: String, expectedFailures: Int?, failures: Int, nextAllowedAt: Int64, now: Int64) async throws -> Bool {
        try await write { db in
            if let expectedFailures {
                return try await db.raw("""
                    UPDATE login_throttle SET failures = \(bind: failures), next_allowed_at = \(bind: nextAllowedAt), updated_at = \(bind: now)
                    WHERE key = \(bind: key) AND failures = \(bind: expectedFailures) RETURNING key
                    """).first() != nil
            }
            return try await db.raw("""
                INSERT INTO login_throttle (key, failures, next_allowed_at, updated_at)
                VALUES (\(bind: key), \(bind: failures), \(bind: nextAllowedAt), \(bind: now))
                ON CONFLICT (key) DO NOTHING RETURNING key
                """).first() != nil
        }
    }

    /// Takes one counted attempt back (one that passed); never below zero.
    func uncountLoginAttempt(key: String) async throws {
        try await write { db in
            try await db.raw("""
                UPDATE login_throttle SET failures = CASE WHEN failures > 0 THEN failures - 1 ELSE 0 END WHERE key = \(bind: key)
                """).run()
        }
    }

    func clearLoginThrottle(keys: [String]) async throws {
        try await write { db in
            for key in keys { try await db.raw("DELETE FROM login_throttle WHERE key = \(bind: key)").run() }
        }
    }

    /// Forgets throttles quiet since `before` (housekeeping).
    func purgeLoginThrottles(before: Int64) async throws {
        try await write { db in
            try await db.raw("DELETE FROM login_throttle WHERE updated_at < \(bind: before)").run()
        }
    }
}
