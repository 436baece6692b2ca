import KeylightCore
import KeylightSigning
import SQLKit

/// A tenant's signing key as stored: the private key sealed under the master key (its seal
/// context names only the kid, so tenants given the same key by the upgrade share one sealed copy's format).
struct SigningKeyRow: Codable, Sendable {
    var tenantId: String
    var kid: String
    var publicKey: String
    var sealedPrivateKey: String
    var status: SigningKeyStatus
    var createdAt: Int64
    var statusChangedAt: Int64

    enum CodingKeys: String, CodingKey {
        case tenantId = "tenant_id", kid, publicKey = "public_key", sealedPrivateKey = "sealed_private_key", status
        case createdAt = "created_at", statusChangedAt = "status_changed_at"
    }
}

enum RetireOutcome: Sendable, Equatable {
    case retired, notFound, active, alreadyRetired
}

/// What a rotation did to one tenant: the key that signs now and whether it was the prepared one.
struct RotationOutcome: Sendable, Equatable {
    var tenantId: String
    var kid: String
    var publicKey: String
    var promotedNext: Bool
}

extension Database {
    static let signingKeyColumns: SQLQueryString = "tenant_id, kid, public_key, sealed_private_key, status, created_at, status_changed_at"

    /// Every tenant's keys, retired ones included (they stay for the record).
    func signingKeyRows() async throws -> [SigningKeyRow] {
        try await sql.raw("""
            SELECT \(Self.signingKeyColumns) FROM tenant_signing_keys ORDER BY tenant_id, created_at, kid
            """).all(decoding: SigningKeyRow.self)
    }

    func signingKeyRows(tenantId: String) async throws -> [SigningKeyRow] {
        try await sql.raw("""
            SELECT \(Self.signingKeyColumns) FROM tenant_signing_keys WHERE tenant_id = \(bind: tenantId) ORDER BY created_at, kid
            """).all(decoding: SigningKeyRow.self)
    }

    /// Tenants without any key (created by a server from before per-tenant keys, during a rolling
    /// upgrade). A tenant that has keys is never given a fresh one: no installed app would trust it.
    func tenantsWithoutSigningKey() async throws -> [String] {
        try await sql.raw("""
            SELECT id FROM tenants WHERE NOT EXISTS (
                SELECT 1 FROM tenant_signing_keys k WHERE k.tenant_id = tenants.id)
            ORDER BY id
            """).all(decodingColumn: "id", as: String.self)
    }

    /// Gives a tenant its first active key; nothing when it has one already (another process won). Inside `db`'s transaction.
    static func insertFirstSigningKey(_ row: SigningKeyRow, on db: any SQLDatabase, actor: AuditActor) async throws -> Bool {
        let inserted = try await db.raw("""
            INSERT INTO tenant_signing_keys (\(signingKeyColumns))
            VALUES (\(bind: row.tenantId), \(bind: row.kid), \(bind: row.publicKey), \(bind: row.sealedPrivateKey), 'active', \(bind: row.createdAt), \(bind: row.createdAt))
            ON CONFLICT DO NOTHING RETURNING kid
            """).first()
        guard inserted != nil else { return false }
        try await audit(db, at: row.createdAt, actor: actor, action: "signing_key.create", tenantId: row.tenantId, target: row.kid, details: ["public_key": row.publicKey])
        return true
    }

    func insertFirstSigningKey(_ row: SigningKeyRow, actor: AuditActor) async throws -> Bool {
        try await write { db in try await Self.insertFirstSigningKey(row, on: db, actor: actor) }
    }

    /// Publishes `row` as the tenant's `next` key, unless it has one already: then that one is
    /// returned, so preparing twice never replaces a key apps may already ship.
    func prepareSigningKey(_ row: SigningKeyRow, actor: AuditActor) async throws -> SigningKeyRow {
        try await write { db in
            if let existing = try await db.raw("""
                SELECT \(Self.signingKeyColumns) FROM tenant_signing_keys WHERE tenant_id = \(bind: row.tenantId) AND status = 'next'
                """).first(decoding: SigningKeyRow.self) {
                return existing
            }
            // A rival prepare in another process may have won since the SELECT: then its key is the next one.
            guard try await db.raw("""
                INSERT INTO tenant_signing_keys (\(Self.signingKeyColumns))
                VALUES (\(bind: row.tenantId), \(bind: row.kid), \(bind: row.publicKey), \(bind: row.sealedPrivateKey), 'next', \(bind: row.createdAt), \(bind: row.createdAt))
                ON CONFLICT DO NOTHING RETURNING kid
                """).first() != nil else {
                return try await db.raw("""
                    SELECT \(Self.signingKeyColumns) FROM tenant_signing_keys WHERE tenant_id = \(bind: row.tenantId) AND status = 'next'
                    """).first(decoding: SigningKeyRow.self) ?? row
            }
            try await Self.audit(db, at: row.createdAt, actor: actor, action: "signing_key.prepare", tenantId: row.tenantId, target: row.kid, details: ["public_key": row.publicKey])
            var prepared = row
            prepared.status = .next
            return prepared
        }
    }

    /// Rotates the tenants of `order` in one transaction: each one's `next` key (if prepared) or its
    /// row in `fresh` becomes active, the previous active key becomes `grace`.
    func rotateSigningKeys(fresh: [String: SigningKeyRow], order tenantIds: [String], expectedNextKid: String? = nil, now: Int64, actor: AuditActor) async throws -> [RotationOutcome] {
        try await write { db in
            var outcomes: [RotationOutcome] = []
            for tenantId in tenantIds {
                guard let newRow = fresh[tenantId] else { continue }
                let next = try await db.raw("""
                    SELECT \(Self.signingKeyColumns) FROM tenant_signing_keys WHERE tenant_id = \(bind: tenantId) AND status = 'next'
                    """).first(decoding: SigningKeyRow.self)
                // Thrown inside the transaction: a mismatch on any tenant changes nothing on all.
                if let expectedNextKid, next?.kid != expectedNextKid {
                    throw StagedKeyMismatch(tenantId: tenantId, stagedKid: next?.kid)
                }
                // Demote first: at most one active key per tenant, checked per statement.
                try await db.raw("""
                    UPDATE tenant_signing_keys SET status = 'grace', status_changed_at = \(bind: now)
                    WHERE tenant_id = \(bind: tenantId) AND status = 'active'
                    """).run()
                let promoted = next ?? newRow
                if next != nil {
                    try await db.raw("""
                        UPDATE tenant_signing_keys SET status = 'active', status_changed_at = \(bind: now)
                        WHERE tenant_id = \(bind: tenantId) AND kid = \(bind: promoted.kid)
                        """).run()
                } else {
                    try await db.raw("""
                        INSERT INTO tenant_signing_keys (\(Self.signingKeyColumns))
                        VALUES (\(bind: tenantId), \(bind: newRow.kid), \(bind: newRow.publicKey), \(bind: newRow.sealedPrivateKey), 'active', \(bind: now), \(bind: now))
                        """).run()
                }
                try await Self.audit(db, at: now, actor: actor, action: "signing_key.rotate", tenantId: tenantId, target: promoted.kid, details: ["prepared": next != nil ? "yes" : "no"])
                outcomes.append(RotationOutcome(tenantId: tenantId, kid: promoted.kid, publicKey: promoted.publicKey, promotedNext: next != nil))
            }
            return outcomes
        }
    }

    /// Retires `kid` for one tenant, or for every tenant that has it (`tenantId` nil). The key
    /// that signs now cannot be retired; with several tenants, nothing changes if it signs for any.
    func retireSigningKey(kid: String, tenantId: String?, now: Int64, actor: AuditActor) async throws -> RetireOutcome {
        try await write { db in
            let scope: SQLQueryString = tenantId.map { (tenant: String) -> SQLQueryString in "AND tenant_id = \(bind: tenant)" } ?? ""
            let statuses = try await db.raw("SELECT status FROM tenant_signing_keys WHERE kid = \(bind: kid) \(scope)")
                .all(decodingColumn: "status", as: String.self)
            if statuses.isEmpty { return .notFound }
            if statuses.contains(SigningKeyStatus.active.rawValue) { return .active }
            let affected = try await db.raw("""
                UPDATE tenant_signing_keys SET status = 'retired', status_changed_at = \(bind: now)
                WHERE kid = \(bind: kid) \(scope) AND status IN ('grace', 'next') RETURNING tenant_id
                """).all(decodingColumn: "tenant_id", as: String.self)
            if affected.isEmpty { return .alreadyRetired }
            for tenant in affected {
                try await Self.audit(db, at: now, actor: actor, action: "signing_key.retire", tenantId: tenant, target: kid)
            }
            return .retired
        }
    }
}

/// A rotation asked to promote a staged key that is not the one staged (or none is).
struct StagedKeyMismatch: Error, Equatable {
    let tenantId: String
    let stagedKid: String?
}
