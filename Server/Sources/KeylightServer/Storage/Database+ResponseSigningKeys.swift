import SQLKit

/// A stored intermediate key: private key sealed under the master key, certificate in base64.
struct ResponseSigningKeyRow: Codable, Sendable {
    var id: String
    var rootKid: String
    var createdDay: Int64
    var expiryDay: Int64
    var sealedPrivateKey: String
    var certificate: String

    enum CodingKeys: String, CodingKey {
        case id, rootKid = "root_kid", createdDay = "created_day", expiryDay = "expiry_day"
        case sealedPrivateKey = "sealed_private_key", certificate
    }
}

extension Database {
    /// Today's intermediate key for `rootKid`, if some process created it.
    func responseSigningKey(rootKid: String, createdDay: Int64) async throws -> ResponseSigningKeyRow? {
        try await sql.raw("""
            SELECT id, root_kid, created_day, expiry_day, sealed_private_key, certificate FROM response_signing_keys
            WHERE root_kid = \(bind: rootKid) AND created_day = \(bind: createdDay)
            """).first(decoding: ResponseSigningKeyRow.self)
    }

    /// Stores a new intermediate key unless another process stored today's first; drops keys
    /// that expired before yesterday.
    func insertResponseSigningKey(_ row: ResponseSigningKeyRow, now: Int64) async throws {
        try await write { db in
            try await db.raw("""
                INSERT INTO response_signing_keys (id, root_kid, created_day, expiry_day, sealed_private_key, certificate, created_at)
                VALUES (\(bind: row.id), \(bind: row.rootKid), \(bind: row.createdDay), \(bind: row.expiryDay),
                        \(bind: row.sealedPrivateKey), \(bind: row.certificate), \(bind: now))
                ON CONFLICT DO NOTHING
                """).run()
            try await db.raw("DELETE FROM response_signing_keys WHERE expiry_day < \(bind: row.createdDay - 1)").run()
        }
    }
}
