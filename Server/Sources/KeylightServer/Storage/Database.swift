import Foundation
import Logging
import SQLKit

/// The server's database: an `SQLDatabase` plus how to write to it safely.
public struct Database: Sendable {
    let sql: any SQLDatabase
    /// Reads of a few rows by key on the hot path (a validate's license lookup). SQLite files
    /// answer them on the caller's thread from statements prepared once; elsewhere this is `sql`.
    let pointReads: any SQLDatabase
    let capabilities: StorageCapabilities
    private let writerGate: AsyncResourcePool<Void>?
    /// The hot write transactions' own connection (SQLite files); nil: they take the pool like any write.
    let hotWriter: SQLiteHotWriter?
    private let closeConnections: @Sendable () async -> Void
    /// Where changes record their webhook events; nil records none.
    private(set) var outbox: WebhookOutbox?
    /// The same database without per-query deadlines (migrations: waiting for another process's
    /// migration lock, or a long `CREATE INDEX`, is expected there).
    private let sqlWithoutDeadlines: any SQLDatabase

    init(
        sql: any SQLDatabase, pointReads: (any SQLDatabase)? = nil, withoutDeadlines: (any SQLDatabase)? = nil,
        hotWriter: SQLiteHotWriter? = nil, driver: DriverTraits, close: @escaping @Sendable () async -> Void
    ) {
        self.sql = sql
        self.pointReads = pointReads ?? sql
        self.sqlWithoutDeadlines = withoutDeadlines ?? sql
        self.capabilities = StorageCapabilities(database: sql, driver: driver)
        self.writerGate = capabilities.serializesWritersInProcess ? AsyncResourcePool([()]) : nil
        // The hot writer's one borrower is whoever holds the gate.
        self.hotWriter = writerGate == nil ? nil : hotWriter
        self.closeConnections = close
    }

    /// The embedded SQLite database at `path`, or in memory when `path` is nil.
    public static func sqlite(path: String?, poolSize: Int = 4, logger: Logger) async throws -> Database {
        let opened = try await SQLiteStorage.open(path: path, poolSize: poolSize, logger: logger)
        return Database(sql: opened.database, pointReads: opened.pointReads, hotWriter: opened.hotWriter, driver: .sqlite, close: opened.close)
    }

    /// A PostgreSQL database at `url`, shared with any other server processes using it.
    public static func postgres(url: String, poolSize: Int = 8, logger: Logger) async throws -> Database {
        try await PostgresStorage.open(url: url, poolSize: poolSize, logger: logger)
    }

    /// Creates an empty, uniquely named database on the PostgreSQL server of `serverURL` and
    /// answers its name and URL (for tests and benchmarks: every run on a database of its own).
    public static func createScratchDatabase(serverURL: String, prefix: String = "kl_", logger: Logger) async throws -> (name: String, url: String) {
        let name = prefix + RandomUUID.compactLowercaseString()
        guard var components = URLComponents(string: serverURL) else { throw StorageError.unreachable(redacted(url: serverURL), reason: "not a URL") }
        // A minute for the connection and no query deadline: tests and benchmarks create these
        // while a loaded server forks backends and copies template1 for others (a clean-clone CI
        // run timed out at the 10 s a serving process waits).
        let server = try await PostgresStorage.open(url: serverURL, poolSize: 1, queryDeadline: .seconds(120), connectionWait: .seconds(60), logger: logger)
        do {
            try await server.sql.raw("CREATE DATABASE \(ident: name)").run()
        } catch {
            await server.close()
            throw error
        }
        await server.close()
        components.path = "/" + name
        return (name, components.string ?? serverURL)
    }

    /// A database URL with its password hidden, for logs and messages.
    public static func redacted(url: String) -> String {
        PostgresStorage.redacting(url)
    }

    /// This database, recording webhook events sealed by `sealer` (the server sets this up once
    /// its master key is loaded).
    func recordingWebhooks(sealer: SecretSealer) -> Database {
        var copy = self
        copy.outbox = WebhookOutbox(sealer: sealer)
        return copy
    }

    /// Runs the driver's after-bulk-write statements (outside any transaction).
    func tidyAfterBulkWrite() async throws {
        for statement in capabilities.afterBulkWrite {
            try await sql.raw(SQLQueryString(statement)).run()
        }
    }

    /// Runs `body` in one write transaction on one connection: committed if it returns,
    /// rolled back if it throws. `body` must use only the database it is given.
    ///
    /// Bounded without a deadline of its own: every query has one (PostgreSQL: `GuardedConnectionSQLDatabase`;
    /// SQLite: its busy timeout), the pool's connection request has one, and a transaction is a
    /// finite number of queries.
    func write<R: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        try await write(on: sql, body)
    }

    /// ``write(_:)`` without per-query deadlines: for migrations, which wait for another
    /// process's migration lock and may take long on a big table.
    func writeWithoutDeadlines<R: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        try await write(on: sqlWithoutDeadlines, body)
    }

    /// ``write(_:)`` for the hot, short transactions (activate, deactivate, a floating seat's
    /// heartbeat): on an SQLite file the whole transaction runs as one job on the writer thread from kept
    /// statements (``SQLiteHotWriter``), falling back to the pool when another process holds the
    /// lock. `body` must be short and touch only the database it is given: it may run twice (once
    /// rolled back).
    func hotWrite<R: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        guard let hotWriter, let writerGate else { return try await write(body) }
        let (sql, logger, eventLoop) = (self.sql, self.sql.logger, self.sql.eventLoop)
        // The hot writer takes the gate itself: a group of transactions holds it once.
        if case .done(let result) = try await hotWriter.transaction(gate: writerGate, logger: logger, eventLoop: eventLoop, body) {
            return result
        }
        return try await write(on: sql, body)
    }

    private func write<R: Sendable>(on sql: any SQLDatabase, _ body: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        if let writerGate {
            return try await writerGate.withResource { _ in try await transaction(on: sql, body) }
        }
        return try await transaction(on: sql, body)
    }

    private func transaction<R: Sendable>(on sql: any SQLDatabase, _ body: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        let begin = capabilities.beginWrite
        return try await sql.withSession { session in
            try await session.raw(SQLQueryString(begin)).run()
            do {
                let result = try await body(session)
                try await session.raw("COMMIT").run()
                return result
            } catch {
                // A failed COMMIT leaves the transaction open; roll back either way.
                try? await session.raw("ROLLBACK").run()
                throw error
            }
        }
    }

    /// `FOR UPDATE OF <alias>` where the database locks rows, nothing where a write transaction
    /// already holds the database's write lock. Naming the table keeps outer-joined rows unlocked.
    func lockRows(of alias: String) -> SQLQueryString {
        SQLQueryString(capabilities.rowLockClause.map { " \($0) OF \(alias)" } ?? "")
    }

    /// Closes every connection; later calls fail with `StorageError.closed`.
    public func close() async {
        await closeConnections()
    }
}
