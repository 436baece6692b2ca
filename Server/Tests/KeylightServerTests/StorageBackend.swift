import Foundation
import KeylightTestSupport
import KeylightCore
@testable import KeylightServer
import Logging
import SQLKit
import Testing

/// The databases the storage conformance suite runs on. PostgreSQL joins when
/// `KEYLIGHT_TEST_POSTGRES_URL` is set (CI always sets it); each test gets a fresh schema.
enum StorageBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqliteMemory, sqliteFile, postgres

    static var postgresURL: String? {
        ProcessInfo.processInfo.environment["KEYLIGHT_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// With `KEYLIGHT_REQUIRE_ALL_TESTS=1` PostgreSQL is always among them (and its cases fail
    /// by name when there is no server); locally its absence is said once, not hidden.
    static var available: [StorageBackend] {
        if postgresURL != nil || PrerequisiteGate.isRequired { return allCases }
        noteOnce
        return [.sqliteMemory, .sqliteFile]
    }

    private static let noteOnce: Void = print("note: storage tests run without PostgreSQL (KEYLIGHT_TEST_POSTGRES_URL is not set)")

    var testDescription: String { rawValue }

    /// Runs `body` on a fresh migrated database and closes it whether `body` returns or throws (an
    /// unclosed PostgreSQL pool asserts in its deinit, which would end the whole test process).
    func with(poolSize: Int = 4, _ body: (Database) async throws -> Void) async throws {
        let database = try await open(poolSize: poolSize)
        do {
            try await body(database)
        } catch {
            await database.close()
            throw error
        }
        await database.close()
    }

    /// A fresh database, migrated (to the end, or through `migrations` only).
    func open(poolSize: Int = 4, migrations: [Migration] = Migration.all) async throws -> Database {
        let database: Database
        switch self {
        case .sqliteMemory:
            database = try await Database.sqlite(path: nil, logger: Harness.logger)
        case .sqliteFile:
            database = try await Database.sqlite(path: try ConcurrencyTests.databaseFile(), poolSize: poolSize, logger: Harness.logger)
        case .postgres:
            let url = try #require(Self.postgresURL)
            // Storage tests check outcomes, not waiting times: with every suite running at once on
            // two cores, 60 writers queued on one row may wait longer than a server should.
            database = try await PostgresStorage.open(
                url: url, poolSize: poolSize, searchPath: [try await Self.freshSchema(url: url)], connectionWait: .seconds(60), logger: Harness.logger
            )
        }
        do {
            _ = try await database.migrate(migrations, logger: Harness.logger)
        } catch {
            // An open pool must be shut down before it is released (async-kit asserts it).
            await database.close()
            throw error
        }
        return database
    }

    /// A new empty schema on the test server.
    static func freshSchema(url: String) async throws -> String {
        let name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let admin = try await Database.postgres(url: url, poolSize: 1, logger: Harness.logger)
        try await admin.sql.raw("CREATE SCHEMA \(ident: name)").run()
        await admin.close()
        return name
    }
}

extension Harness {
    /// A server on `backend` (PostgreSQL in a fresh schema).
    static func on(_ backend: StorageBackend, limits: ServerLimits = .unlimited) async throws -> Harness {
        var harness = Harness(limits: limits)
        switch backend {
        case .sqliteMemory: break
        case .sqliteFile: harness.configuration.databasePath = try ConcurrencyTests.databaseFile()
        case .postgres:
            let url = try #require(StorageBackend.postgresURL)
            harness.configuration.databaseURL = url
            harness.configuration.searchPath = [try await StorageBackend.freshSchema(url: url)]
            harness.configuration.masterKey = Base64.encode([UInt8](repeating: 7, count: 32))
        }
        return harness
    }
}
