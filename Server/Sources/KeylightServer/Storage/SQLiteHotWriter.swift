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
/// **Group commit.** A transaction that finishes while others are queued behind it on the writer
/// thread does not commit: it keeps the transaction open, each member inside a savepoint of its
/// own, and waits. The group commits when the queue runs dry (``WriterThreadExecutor/whenIdle``)
/// or reaches ``groupLimit`` members, and only then does any member answer. Under load one
/// `COMMIT`, one write of the log's frames, covers many activations; alone, a transaction
/// commits at once as before. A member whose body fails is rolled back to its savepoint and
/// throws; the others are untouched. If the group's `COMMIT` fails, every member fails with it
/// (or, when SQLite was busy, is run again on the pool): none has answered yet.
///
/// The group holds the in-process writer gate from its `BEGIN` to its end, so no pool write
/// interleaves with it; another process's writer is met as `SQLITE_BUSY` at `BEGIN`, and the
/// transaction is then run on the pool instead, which waits for the lock on its own threads.
final class SQLiteHotWriter: Sendable {
    /// Members at most in one group, so a steady stream still commits (and answers) regularly.
    static let groupLimit = 64

    private let path: String
    /// The writer thread (tests hold it busy to line transactions up behind it).
    let thread = WriterThreadExecutor(name: "sqlite-writer")
    private let state = NIOLockedValueBox(State())

    private struct State {
        var idle: SQLiteKeptConnection?
        var lent = false
        var closed = false
        var committed = 0
        var handedToPool = 0
        var commits = 0
        var group: Group?
    }

    /// An open transaction and the members waiting for its end.
    private struct Group {
        let connection: SQLiteKeptConnection
        let gate: AsyncResourcePool<Void>
        var members = 0
        var waiting: [CheckedContinuation<GroupEnd, Never>] = []
    }

    /// How a group ended, as each member learns it.
    private enum GroupEnd {
        case committed
        /// Rolled back because SQLite was busy: run the member on the pool.
        case rerun
        case failed(any Error)
    }

    /// Transactions committed here, and transactions handed to the pool (busy, or no connection).
    var counts: (committed: Int, handedToPool: Int) { state.withLockedValue { ($0.committed, $0.handedToPool) } }

    /// `COMMIT`s run here: fewer than ``counts``' committed transactions when groups formed.
    var commits: Int { state.withLockedValue { $0.commits } }

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
        thread.whenIdle = { [weak self] in self?.endGroup() }
    }

    /// Runs `body` inside a savepoint of the open group (opening one, with `gate` held, when
    /// none is), and answers once the group has committed. `.notRun` when the connection is
    /// closed, lent or cannot be opened, or SQLite was busy (nothing of it committed); a failure
    /// of `body` or of SQLite is rolled back and thrown.
    func transaction<R>(
        gate: AsyncResourcePool<Void>, logger: Logger, eventLoop: any EventLoop, _ body: (any SQLDatabase) async throws -> R
    ) async throws -> Outcome<R> {
        // Nothing in the body suspends (every statement runs at once on the connection), so a
        // member runs as one job on the writer thread; waiting for the gate or for the group's
        // end are the only suspensions.
        try await thread.run {
            try await transactionHere(gate: gate, logger: logger, eventLoop: eventLoop, body)
        }
    }

    private func transactionHere<R>(
        gate: AsyncResourcePool<Void>, logger: Logger, eventLoop: any EventLoop, _ body: (any SQLDatabase) async throws -> R
    ) async throws -> Outcome<R> {
        guard let connection = try await joinOrOpenGroup(gate: gate) else { return notRun() }
        let result: R
        do {
            try connection.execute("SAVEPOINT hot_write")
            result = try await body(SQLiteWriteSession(connection: connection, logger: logger, eventLoop: eventLoop))
            try connection.execute("RELEASE hot_write")
        } catch {
            let undone = connection.inTransaction
                && (try? connection.execute("ROLLBACK TO hot_write")) != nil
                && (try? connection.execute("RELEASE hot_write")) != nil
            if !undone {
                // SQLite rolled the whole transaction back (an I/O error, a full disk), or the
                // savepoint could not be undone: the earlier members' work goes too.
                if connection.inTransaction { try? connection.execute("ROLLBACK") }
                _ = endGroup(rolledBack: true)
            } else if !thread.hasQueuedJobs {
                _ = endGroup()
            }
            if let error = error as? SQLiteStatementError, error.isBusy { return notRun() }
            throw error
        }
        let full = state.withLockedValue { state -> Bool in
            state.group?.members += 1
            return (state.group?.members ?? 0) >= Self.groupLimit
        }
        let end: GroupEnd
        if full || !thread.hasQueuedJobs {
            end = endGroup()
        } else {
            // The jobs behind this one join the group; whichever ends it resumes this one.
            end = await withCheckedContinuation { continuation in
                state.withLockedValue { $0.group?.waiting.append(continuation) }
            }
        }
        switch end {
        case .committed: return .done(result)
        case .rerun: return .notRun
        case .failed(let error): throw error
        }
    }

    /// The open group's connection, or a new group's (holding `gate`, after `BEGIN IMMEDIATE`);
    /// nil when there is no connection or SQLite is busy, with the gate given back.
    private func joinOrOpenGroup(gate: AsyncResourcePool<Void>) async throws -> SQLiteKeptConnection? {
        if let open = state.withLockedValue({ $0.group?.connection }) { return open }
        try await gate.acquire()
        // Back on the writer thread, holding the gate: no group is open (one holds the gate).
        guard let connection = borrow() else {
            gate.release(())
            return nil
        }
        do {
            try connection.execute("BEGIN IMMEDIATE")
        } catch {
            giveBack(connection)
            gate.release(())
            if let error = error as? SQLiteStatementError, error.isBusy { return nil }
            throw error
        }
        state.withLockedValue { $0.group = Group(connection: connection, gate: gate) }
        return connection
    }

    /// Commits the open group (or, `rolledBack`, ends one SQLite already rolled back), gives
    /// back its connection and gate, and resumes its waiting members. Runs on the writer thread.
    @discardableResult
    private func endGroup(rolledBack: Bool = false) -> GroupEnd {
        guard let group = state.withLockedValue({ state -> Group? in
            defer { state.group = nil }
            return state.group
        }) else { return .committed }
        var end = GroupEnd.rerun
        if !rolledBack {
            do {
                try group.connection.execute("COMMIT")
                end = .committed
            } catch {
                // A failed COMMIT can leave the transaction open; roll back whatever is open.
                if group.connection.inTransaction { try? group.connection.execute("ROLLBACK") }
                if let error = error as? SQLiteStatementError, error.isBusy { end = .rerun } else { end = .failed(error) }
            }
        }
        state.withLockedValue { state in
            switch end {
            case .committed:
                state.committed += group.members
                state.commits += group.members == 0 ? 0 : 1
            case .rerun: state.handedToPool += group.members
            case .failed: break
            }
        }
        giveBack(group.connection)
        group.gate.release(())
        for member in group.waiting { member.resume(returning: end) }
        return end
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
    private let encoder = SQLiteBindEncoder()
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
