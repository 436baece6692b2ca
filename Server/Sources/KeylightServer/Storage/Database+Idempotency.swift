import SQLKit

/// What an `Idempotency-Key` finds when a request claims it.
enum IdempotencyClaim: Equatable, Sendable {
    /// The key is this request's to run (new, or its first request's process died mid-way).
    case owned
    /// Answered before: the sealed answer to replay.
    case answered(sealedAnswer: String)
    /// Its first request is still running.
    case inProgress
    /// Used with another request.
    case mismatch
}

extension Database {
    /// Claims `key` for a request with `fingerprint`. One request owns a key at a time, across
    /// processes: the insert is atomic, and a key whose owner stopped answering (its lease ran out)
    /// is taken over by a single writer too. An expired key counts as unused.
    /// `owner` names this claim: only its owner may keep the answer, release it or renew it (a
    /// claim taken over after its lease ran out is no longer the first owner's).
    func claimIdempotencyKey(scope: String, key: String, fingerprint: String, owner: String, now: Int64, lease: Int64, lifetime: Int64) async throws -> IdempotencyClaim {
        try await write { db in
            try await db.raw("DELETE FROM idempotency_keys WHERE scope = \(bind: scope) AND idem_key = \(bind: key) AND expires_at <= \(bind: now)").run()
            let inserted = try await db.raw("""
                INSERT INTO idempotency_keys (scope, idem_key, fingerprint, state, owner, locked_until, created_at, expires_at)
                VALUES (\(bind: scope), \(bind: key), \(bind: fingerprint), 'running', \(bind: owner), \(bind: now + lease), \(bind: now), \(bind: now + lifetime))
                ON CONFLICT (scope, idem_key) DO NOTHING RETURNING idem_key
                """).first()
            if inserted != nil { return .owned }
            guard let row = try await db.raw("""
                SELECT fingerprint, state, sealed_answer, locked_until FROM idempotency_keys WHERE scope = \(bind: scope) AND idem_key = \(bind: key)
                """).first() else { return .inProgress }  // deleted between the two statements: ask again
            guard try row.decode(column: "fingerprint", as: String.self) == fingerprint else { return .mismatch }
            if try row.decode(column: "state", as: String.self) == "answered", let sealed = try row.decode(column: "sealed_answer", as: String?.self) {
                return .answered(sealedAnswer: sealed)
            }
            guard try row.decode(column: "locked_until", as: Int64.self) <= now else { return .inProgress }
            let taken = try await db.raw("""
                UPDATE idempotency_keys SET locked_until = \(bind: now + lease), owner = \(bind: owner)
                WHERE scope = \(bind: scope) AND idem_key = \(bind: key) AND state = 'running' AND locked_until <= \(bind: now) RETURNING idem_key
                """).first()
            return taken == nil ? .inProgress : .owned
        }
    }

    /// Keeps the answer (sealed) for replays.
    func answerIdempotencyKey(scope: String, key: String, owner: String, sealedAnswer: String) async throws {
        try await write { db in
            try await db.raw("""
                UPDATE idempotency_keys SET state = 'answered', sealed_answer = \(bind: sealedAnswer), locked_until = 0
                WHERE scope = \(bind: scope) AND idem_key = \(bind: key) AND owner = \(bind: owner) AND state = 'running'
                """).run()
        }
    }

    /// Extends the owner's lease while its request runs.
    func renewIdempotencyKey(scope: String, key: String, owner: String, until: Int64) async throws {
        try await write { db in
            try await db.raw("""
                UPDATE idempotency_keys SET locked_until = \(bind: until)
                WHERE scope = \(bind: scope) AND idem_key = \(bind: key) AND owner = \(bind: owner) AND state = 'running'
                """).run()
        }
    }

    /// Forgets a claim whose request failed on the server's side (a 5xx is not kept: a retry runs again).
    func releaseIdempotencyKey(scope: String, key: String, owner: String) async throws {
        try await write { db in
            try await db.raw("DELETE FROM idempotency_keys WHERE scope = \(bind: scope) AND idem_key = \(bind: key) AND owner = \(bind: owner) AND state = 'running'").run()
        }
    }

    /// Sweeps expired keys; answers how many.
    @discardableResult
    func purgeIdempotencyKeys(now: Int64) async throws -> Int {
        try await write { db in
            try await db.raw("DELETE FROM idempotency_keys WHERE expires_at <= \(bind: now) RETURNING idem_key").all().count
        }
    }
}
