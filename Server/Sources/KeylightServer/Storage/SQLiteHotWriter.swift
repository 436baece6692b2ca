import Logging
import NIOConcurrencyHelpers
import NIOCore
import SQLKit
import SQLiteKit

/// The hot write transactions of a file database on one kept connection
/// (``SQLiteKeptConnection``), each run as one job on a thread of their own
/// (``WriterThreadExecutor``): an activation is one hop there and one back, not a hop to the
/// pool's threads and back per statement, and never occupies an event loop.
///
/// Callers hold the in-process writer gate (``Database/hotWrite(_:)``), so the connection has
/// one borrower; another process's writer is met as `SQLITE_BUSY`, and the transaction is then
/// rolled back here and run on the pool instead, which waits for the lock on its own threads.
final class SQLiteHotWriter: Sendable {
    private let path: String
    private let thread = WriterThreadExecutor(name: "sqlite-writer")
    private let state = NIOLockedValueBox(State())

    private struct State {
        var idle: SQLiteKeptConnection?
        var lent = false
        var closed = false
        var committed = 0
        var handedToPool = 0
    }

    /// Transactions committed here, and transactions handed to the pool (busy, or no connection).
    var counts: (committed: Int, handedToPool: Int) { state.withLockedValue { ($0.committed, $0.handedToPool) } }

    /// Statements the kept connection has prepared (each distinct statement once), if it is open and idle.
    var preparations: Int? { state.withLockedValue { $0.idle?.preparations } }

    /// Whether the calling code runs on the writer thread (tests: a transaction's body must).
    var isWriterThread: Bool { thread.isCurrentThread }

    /// Kept statements SQLite had to prepare again, if the connection is open and idle.
    var repreparedStatements: [String: Int]? { state.withLockedValue { $0.idle?.repreparedStatements } }

    /// Whether the transaction ran here, and its result.
    enum Outcome<R> {
        case done(R)
        /// Nothing was changed: run it on the pool.
        case notRun
    }

    init(path: String) {
        self.path = path
    }

    /// Runs `body` as one `BEGIN IMMEDIATE` … `COMMIT` on the kept connection. `.notRun` when the
    /// connection is closed, lent or cannot be opened, or SQLite was busy at any point (rolled
    /// back); a failure of `body` or of SQLite is rolled back and thrown.
    func transaction<R>(
        logger: Logger, eventLoop: any EventLoop, _ body: (any SQLDatabase) async throws -> R
    ) async throws -> Outcome<R> {
        // Nothing in here suspends (every statement runs at once on the connection), so from
        // here to the return is one job on the writer thread.
        try await thread.run {
            try await transactionHere(logger: logger, eventLoop: eventLoop, body)
        }
    }

    private func transactionHere<R>(
        logger: Logger, eventLoop: any EventLoop, _ body: (any SQLDatabase) async throws -> R
    ) async throws -> Outcome<R> {
        guard let connection = borrow() else { return notRun() }
        defer { giveBack(connection) }
        do {
            try connection.execute("BEGIN IMMEDIATE")
        } catch let error as SQLiteStatementError where error.isBusy {
            return notRun()
        }
        do {
            let result = try await body(SQLiteWriteSession(connection: connection, logger: logger, eventLoop: eventLoop))
            try connection.execute("COMMIT")
            state.withLockedValue { $0.committed += 1 }
            return .done(result)
        } catch {
            // A failed COMMIT can leave the transaction open; roll back whatever is open.
            if connection.inTransaction { try? connection.execute("ROLLBACK") }
            if let error = error as? SQLiteStatementError, error.isBusy { return notRun() }
            throw error
        }
    }

    private func notRun<R>() -> Outcome<R> {
        state.withLockedValue { $0.handedToPool += 1 }
        return .notRun
    }

    /// Closes the connection now, or when it comes back.
    func close() {
        let idle = state.withLockedValue { state -> SQLiteKeptConnection? in
            state.closed = true
            defer { state.idle = nil }
            return state.idle
        }
        idle?.close()
        thread.stop()
    }

    private func borrow() -> SQLiteKeptConnection? {
        enum Lending { case idle(SQLiteKeptConnection), open, none }
        let lending = state.withLockedValue { state -> Lending in
            guard !state.closed, !state.lent else { return .none }
            state.lent = true
            if let idle = state.idle {
                state.idle = nil
                return .idle(idle)
            }
            return .open
        }
        switch lending {
        case .idle(let connection): return connection
        case .none: return nil
        case .open:
            if let connection = SQLiteKeptConnection.openForWrites(path: path) { return connection }
            state.withLockedValue { $0.lent = false }
            return nil
        }
    }

    private func giveBack(_ connection: SQLiteKeptConnection) {
        let closing = state.withLockedValue { state -> Bool in
            state.lent = false
            if state.closed { return true }
            state.idle = connection
            return false
        }
        if closing { connection.close() }
    }
}

/// The database a hot write transaction's body sees: each statement run at once on the kept
/// connection, its rows decoded exactly as sqlite-kit decodes the pool's.
struct SQLiteWriteSession: SQLiteDatabaseDefaults {
    let connection: SQLiteKeptConnection
    let logger: Logger
    let eventLoop: any EventLoop
    private let encoder = SQLiteDataEncoder()
    private let decoder = SQLiteDataDecoder()

    init(connection: SQLiteKeptConnection, logger: Logger, eventLoop: any EventLoop) {
        self.connection = connection
        self.logger = logger
        self.eventLoop = eventLoop
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        let (sql, binds) = serialize(query)
        let values = try binds.map { try encoder.encode($0) }
        let result = try connection.run(sql: sql, binds: values)
        for values in result.rows {
            onRow(SQLiteReadRow(columns: result.columns, values: values, decoder: decoder))
        }
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        try await closure(self)
    }
}
