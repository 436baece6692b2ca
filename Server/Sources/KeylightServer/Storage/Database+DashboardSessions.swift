import Crypto
import Foundation
import Hummingbird
import KeylightCore
import SQLKit

/// Dashboard sessions in the server's database, so every process sharing it knows every
/// session. Rows are keyed by the SHA-256 of the session key: a copy of the database does not
/// hold live cookies. Expired rows read as absent and are purged periodically.
struct SQLSessionStore: PersistDriver {
    let database: Database
    let clock: any WallClock

    private static func id(_ key: String) -> String { Hex.encode(SHA256.hash(data: Data(key.utf8))) }

    private func expiry(_ expires: Duration?) -> Int64? {
        expires.map { clock.unixSeconds + $0.components.seconds }
    }

    func create<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        let json = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
        let inserted = try await database.write { db in
            try await db.raw("""
                INSERT INTO dashboard_sessions (id, value, expires_at) VALUES (\(bind: Self.id(key)), \(bind: json), \(bind: expiry(expires)))
                ON CONFLICT DO NOTHING RETURNING id
                """).first()
        }
        if inserted == nil { throw PersistError.duplicate }
    }

    func set<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        let json = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
        let expiresAt = expiry(expires)
        // nil keeps the stored expiry, as the protocol asks.
        try await database.write { db in
            try await db.raw("""
                INSERT INTO dashboard_sessions (id, value, expires_at) VALUES (\(bind: Self.id(key)), \(bind: json), \(bind: expiresAt))
                ON CONFLICT (id) DO UPDATE SET value = excluded.value,
                    expires_at = CASE WHEN \(bind: expiresAt == nil) THEN dashboard_sessions.expires_at ELSE excluded.expires_at END
                """).run()
        }
    }

    func get<Object: Codable & Sendable>(key: String, as type: Object.Type) async throws -> Object? {
        try await getWithTTL(key: key, as: type)?.object
    }

    func getWithTTL<Object: Codable & Sendable>(key: String, as type: Object.Type) async throws -> (object: Object, ttl: Duration?)? {
        guard let row = try await database.sql.raw("SELECT value, expires_at FROM dashboard_sessions WHERE id = \(bind: Self.id(key))").first() else {
            return nil
        }
        let expiresAt = try row.decode(column: "expires_at", as: Int64?.self)
        let now = clock.unixSeconds
        if let expiresAt, expiresAt <= now { return nil }
        guard let object = try? JSONDecoder().decode(type, from: Data(try row.decode(column: "value", as: String.self).utf8)) else {
            throw PersistError.invalidConversion
        }
        return (object, expiresAt.map { .seconds($0 - now) })
    }

    func remove(key: String) async throws {
        try await database.write { db in
            try await db.raw("DELETE FROM dashboard_sessions WHERE id = \(bind: Self.id(key))").run()
        }
    }

    /// Deletes expired sessions; answers how many.
    @discardableResult
    func purgeExpired() async throws -> Int {
        let now = clock.unixSeconds
        return try await database.write { db in
            try await db.raw("DELETE FROM dashboard_sessions WHERE expires_at <= \(bind: now) RETURNING id").all().count
        }
    }
}
