import Foundation
import KeylightCore
import KeylightTestSupport
@testable import KeylightServer
import SQLKit
import SQLiteKit
import Testing

/// The hot-read path of a SQLite file (issue 18): statements kept per connection, answers the
/// same as the pool's, and anything it cannot answer handed to the pool.
@Suite(.timeLimit(.minutes(6))) struct SQLitePointReadTests {
    typealias Conformance = StorageConformanceTests

    /// A migrated file database with the conformance catalog and `count` activated licenses.
    private func seeded(_ count: Int, _ body: (Database, String, [LicenseKey]) async throws -> Void) async throws {
        let path = try ConcurrencyTests.databaseFile()
        let database = try await Database.sqlite(path: path, logger: Harness.logger)
        do {
            _ = try await database.migrate(logger: Harness.logger)
            try await Conformance.catalog(database)
            var keys: [LicenseKey] = []
            for index in 0..<count {
                // Every other license with an address: the grant carries it, or null (protocol 6.9).
                let (_, key) = try await Conformance.license(database, email: index.isMultiple(of: 2) ? "buyer\(index)@example.com" : nil)
                _ = try await Conformance.activate(database, key, machine: "machine-\(index)")
                keys.append(key)
            }
            try await body(database, path, keys)
        } catch {
            await database.close()
            throw error
        }
        await database.close()
    }

    private func instanceId(_ database: Database, _ key: LicenseKey) async throws -> String {
        try #require(try await database.sql.raw("""
            SELECT i.id FROM instances i JOIN licenses l ON l.id = i.license_id WHERE l.key_hash = \(bind: key.keyHash)
            """).first(decodingColumn: "id", as: String.self))
    }

    @Test func aKeptStatementIsPreparedOnceWhateverItIsBoundTo() async throws {
        try await seeded(12) { database, path, keys in
            let connection = try #require(SQLiteKeptConnection.openForReads(path: path))
            defer { connection.close() }
            for key in keys {
                let query = database.sql.serialize(Database.grantQuery(
                    keyHash: key.keyHash, tenantId: "acme", productId: "app", instanceId: try await instanceId(database, key), lock: ""
                ))
                let values = try query.binds.map { try SQLiteDataEncoder().encode($0) }
                let result = try #require(connection.read(sql: query.sql, binds: values))
                #expect(result.rows.count == 1)
                #expect(result.columns.position(of: "key_hash").map { result.rows[0][$0] } == .text(key.keyHash))
            }
            #expect(connection.preparations == 1)
            // Clearing the bindings after each use (as an obvious tidy-up would) makes SQLite
            // prepare this statement again on every read: 11 of 12 here.
            #expect(connection.repreparations == 0)
        }
    }

    @Test func pointReadsAnswerWhatThePoolAnswers() async throws {
        try await seeded(8) { database, _, keys in
            #expect(database.pointReads is SQLitePointReadDatabase)
            for (index, key) in keys.enumerated() {
                let instance = try await instanceId(database, key)
                for instanceId in [instance, "no-such-instance", nil] {
                    let fast = try await database.grant(keyHash: key.keyHash, tenantId: "acme", productId: "app", instanceId: instanceId)
                    let pooled = try await database.sql.raw(Database.grantQuery(keyHash: key.keyHash, tenantId: "acme", productId: "app", instanceId: instanceId, lock: ""))
                        .first(decoding: LicenseGrant.self)
                    #expect(fast != nil)
                    #expect(fast == pooled)
                    // Read without sql-kit (the statement serialised once), as validate reads it.
                    let direct = try #require(database.pointReads as? SQLitePointReadDatabase)
                        .grant(keyHash: key.keyHash, tenantId: "acme", productId: "app", instanceId: instanceId)
                    #expect(direct == .some(pooled))
                    // The license pane's two, read by the kept statement too.
                    #expect(fast?.customerEmail == (index.isMultiple(of: 2) ? "buyer\(index)@example.com" : nil) && fast?.keyTypeName == "Pro")
                }
            }
            #expect(try await database.grant(keyHash: String(repeating: "f", count: 64), tenantId: "acme", productId: "app", instanceId: nil) == nil)
            let readers = try #require((database.pointReads as? SQLitePointReadDatabase)?.readers)
            #expect(readers.openConnections >= 1)
        }
    }

    @Test func whatIsNotAPlainReadIsRefusedAndChangesNothing() async throws {
        try await seeded(1) { database, path, keys in
            let connection = try #require(SQLiteKeptConnection.openForReads(path: path))
            defer { connection.close() }
            #expect(connection.read(sql: "UPDATE licenses SET status = 'revoked'", binds: []) == nil)
            #expect(connection.read(sql: "PRAGMA user_version", binds: []) == nil)
            #expect(connection.read(sql: "BEGIN", binds: []) == nil)
            // A read given fewer values than it has parameters.
            #expect(connection.read(sql: "SELECT key_hash FROM licenses WHERE key_hash = ?1", binds: []) == nil)
            #expect(connection.read(sql: "SELECT not valid sql", binds: []) == nil)
            let status = try await database.sql.raw("SELECT status FROM licenses WHERE key_hash = \(bind: keys[0].keyHash)").first(decodingColumn: "status", as: String.self)
            #expect(status == "active")
            // Through the database, a refused statement is run by the pool.
            try await database.pointReads.raw("UPDATE licenses SET customer_email = 'pool@example.com' WHERE key_hash = \(bind: keys[0].keyHash)").run()
            let email = try await database.sql.raw("SELECT customer_email FROM licenses WHERE key_hash = \(bind: keys[0].keyHash)").first(decodingColumn: "customer_email", as: String.self)
            #expect(email == "pool@example.com")
        }
    }

    @Test func withEveryReaderLentOrClosedTheReadTakesThePool() async throws {
        try await seeded(1) { database, path, keys in
            let none = SQLitePointReaders(path: path, limit: 0)
            #expect(none.read(sql: "SELECT 1", binds: []) == nil)
            let viaPool = SQLitePointReadDatabase(readers: none, fallback: database.sql)
            let hash = try await viaPool.raw("SELECT key_hash FROM licenses WHERE key_hash = \(bind: keys[0].keyHash)").first(decodingColumn: "key_hash", as: String.self)
            #expect(hash == keys[0].keyHash)

            let readers = SQLitePointReaders(path: path, limit: 2)
            #expect(readers.read(sql: "SELECT 1 AS one", binds: [])?.rows == [[.integer(1)]])
            #expect(readers.openConnections == 1)
            readers.close()
            #expect(readers.openConnections == 0)
            #expect(readers.read(sql: "SELECT 1 AS one", binds: []) == nil)
        }
    }

    /// The readers read pages with `read()`, the pool and the hot writer through a memory map
    /// (SQLite drops a reader's map at every commit, which cost a million devices' validates a
    /// page fault per page touched).
    @Test func readersReadWithoutAMemoryMap() async throws {
        try await seeded(1) { database, path, _ in
            let reader = try #require(SQLiteKeptConnection.openForReads(path: path))
            defer { reader.close() }
            #expect(reader.memoryMapLimit == 0)
            let writer = try #require(SQLiteKeptConnection.openForWrites(path: path))
            defer { writer.close() }
            #expect(writer.memoryMapLimit == 1 << 30)
            #expect(writer.read(sql: "PRAGMA mmap_size", binds: [])?.rows == [[.integer(1 << 30)]])
            let pooled = try await database.sql.raw("PRAGMA mmap_size").first(decodingColumn: "mmap_size", as: Int.self)
            #expect(pooled == 1 << 30)
        }
    }

    @Test func aFileThatCannotBeOpenedIsNoReader() throws {
        let directory = try temporaryDirectory()
        #expect(SQLiteKeptConnection.openForReads(path: directory.appendingPathComponent("missing/db.sqlite").path) == nil)
    }
}
