import KeylightCore
import SQLKit

/// A signing key as stored: the private key sealed under the master key.
struct SigningKeyRow: Codable, Sendable {
    var kid: String
    var publicKey: String
    var sealedPrivateKey: String
    var status: SigningKeyStatus
    var createdAt: Int64
    var statusChangedAt: Int64

    enum CodingKeys: String, CodingKey {
        case kid, publicKey = "public_key", sealedPrivateKey = "sealed_private_key", status, createdAt = "created_at", statusChangedAt = "status_changed_at"
    }
}

enum RetireOutcome: Sendable, Equatable {
    case retired, notFound, active, alreadyRetired
}

extension Database {
    func signingKeyRows() async throws -> [SigningKeyRow] {
        try await sql.raw("""
            SELECT kid, public_key, sealed_private_key, status, created_at, status_changed_at FROM signing_keys ORDER BY created_at, kid
            """).all(decoding: SigningKeyRow.self)
    }

    /// Makes `row` the active key. With `replaceActive`, the current active key moves to
    /// `grace`; without, nothing happens when another active key exists (first start of
    /// several processes at once) and false is returned.
    func installSigningKey(_ row: SigningKeyRow, replaceActive: Bool, actor: Actor) async throws -> Bool {
        try await write { db in
            if replaceActive {
                try await db.raw("""
                    UPDATE signing_keys SET status = 'grace', status_changed_at = \(bind: row.createdAt) WHERE status = 'active'
                    """).run()
            }
            let inserted = try await db.raw("""
                INSERT INTO signing_keys (kid, public_key, sealed_private_key, status, created_at, status_changed_at)
                VALUES (\(bind: row.kid), \(bind: row.publicKey), \(bind: row.sealedPrivateKey), 'active', \(bind: row.createdAt), \(bind: row.createdAt))
                ON CONFLICT DO NOTHING RETURNING kid
                """).first()
            guard inserted != nil else { return false }
            try await Self.audit(db, at: row.createdAt, actor: actor, action: replaceActive ? "signing_key.rotate" : "signing_key.create", tenantId: nil, target: row.kid, details: ["public_key": row.publicKey])
            return true
        }
    }

    /// Retires a grace key: it leaves the public keyset. The active key cannot be retired.
    func retireSigningKey(kid: String, now: Int64, actor: Actor) async throws -> RetireOutcome {
        try await write { db in
            guard let status = try await db.raw("SELECT status FROM signing_keys WHERE kid = \(bind: kid)")
                .first(decodingColumn: "status", as: String.self) else { return .notFound }
            switch SigningKeyStatus(rawValue: status) {
            case .active: return .active
            case .retired: return .alreadyRetired
            case .grace, nil:
                try await db.raw("""
                    UPDATE signing_keys SET status = 'retired', status_changed_at = \(bind: now) WHERE kid = \(bind: kid)
                    """).run()
                try await Self.audit(db, at: now, actor: actor, action: "signing_key.retire", tenantId: nil, target: kid)
                return .retired
            }
        }
    }
}
