import NIOCore
import SQLiteNIO
// sqlite-nio's vendored SQLite: the very library copy its pool uses, so SQLite's in-process
// bookkeeping of file locks covers both (two copies of SQLite in one process would not see
// each other's POSIX locks and could corrupt the file).
import VaporCSQLite

/// One raw SQLite connection beside sqlite-nio's pool, keeping every statement it prepares and
/// running on the calling thread: the point reads' connections (``SQLitePointReaders``) and the
/// hot write transactions' one (``SQLiteHotWriter``).
///
/// sqlite-nio parses and plans each query anew (about a third of a validate's database time)
/// and runs each statement as a job on its thread pool, a hop there and back per statement (an
/// activation crossed about eight times). A kept connection prepares a statement once, resets
/// it after each use, and never waits for SQLite's lock (`busy_timeout = 0`): a busy answer
/// makes the caller take the pool instead, where waiting is the pool threads' job.
///
/// `@unchecked Sendable`: the handle and the statement table are used by one thread at a time,
/// because their owners lend each connection to one borrower at a time, under a lock.
final class SQLiteKeptConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    private let statementLimit: Int
    private let admits: @Sendable (_ statement: OpaquePointer, _ sql: String) -> Bool
    private var statements: [String: PreparedStatement] = [:]
    /// Statements this connection has prepared (each should be once).
    private(set) var preparations = 0

    private init(handle: OpaquePointer, statementLimit: Int, admits: @escaping @Sendable (OpaquePointer, String) -> Bool) {
        self.handle = handle
        self.statementLimit = statementLimit
        self.admits = admits
    }

    /// For point reads: `query_only` (a statement that would write fails instead of writing),
    /// and only plain `SELECT`s are prepared (`BEGIN`, `PRAGMA` and the like are "read-only" to
    /// SQLite but change the connection). A handful of statements are kept.
    ///
    /// No memory map: in WAL mode SQLite drops a connection's map, with its page cache, at its
    /// first read after any commit (`pagerBeginReadTransaction`), and a busy server commits every
    /// second (the activity flush). A mapped reader then faulted in again every page it touched
    /// (the kernel maps 16 around each fault) and paid to unmap them all at the next commit: with a
    /// million active devices, 2.1 faults a validate and 17 µs more kernel time than with a
    /// thousand, against 7 µs more with `read()`, one copy per page (docs/PERFORMANCE.md).
    static func openForReads(path: String) -> SQLiteKeptConnection? {
        open(
            path: path, statementLimit: 32,
            pragmas: ["PRAGMA busy_timeout = 0", "PRAGMA query_only = ON", "PRAGMA cache_size = -16384", "PRAGMA mmap_size = 0"],
            admits: { statement, sql in sqlite_nio_sqlite3_stmt_readonly(statement) != 0 && isSelect(sql) }
        )
    }

    /// For the hot write transactions, with the pool's settings. A few dozen statements are kept.
    static func openForWrites(path: String) -> SQLiteKeptConnection? {
        open(
            path: path, statementLimit: 96,
            pragmas: [
                "PRAGMA busy_timeout = 0", "PRAGMA synchronous = NORMAL", "PRAGMA foreign_keys = ON",
                "PRAGMA cache_size = -16384", "PRAGMA mmap_size = 1073741824",
                // No checkpoint inside these commits (it would fsync on the writer's thread): the pool's
                // writers, which commit every second (the activity flush), checkpoint the log.
                "PRAGMA wal_autocheckpoint = 0",
            ],
            admits: { _, _ in true }
        )
    }

    /// Opens `path` (which must exist), or nil when it or a pragma fails.
    private static func open(
        path: String, statementLimit: Int, pragmas: [String], admits: @escaping @Sendable (OpaquePointer, String) -> Bool
    ) -> SQLiteKeptConnection? {
        var handle: OpaquePointer?
        // NOMUTEX: SQLite's per-connection mutex is redundant with the one-borrower rule.
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
        guard sqlite_nio_sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK, let handle else {
            if let handle { sqlite_nio_sqlite3_close_v2(handle) }
            return nil
        }
        let connection = SQLiteKeptConnection(handle: handle, statementLimit: statementLimit, admits: admits)
        for pragma in pragmas where sqlite_nio_sqlite3_exec(handle, pragma, nil, nil, nil) != SQLITE_OK {
            connection.close()
            return nil
        }
        return connection
    }

    /// Runs one statement and answers its rows (none for most writes). Rows are collected before
    /// any is handed on, so a caller that falls back to the pool never repeats a row.
    func run(sql: String, binds: [SQLiteData]) throws -> SQLiteReadResult {
        let prepared = try statement(for: sql)
        let statement = prepared.statement
        // Every parameter is bound anew on each use, so the bindings are not cleared afterwards:
        // `sqlite3_clear_bindings` expires a statement whose plan looked at a bound value, which
        // would make SQLite prepare it again every time.
        defer { sqlite_nio_sqlite3_reset(statement) }
        guard binds.count == Int(sqlite_nio_sqlite3_bind_parameter_count(statement)) else {
            throw SQLiteStatementError(code: SQLITE_RANGE, message: "\(binds.count) values for \(sqlite_nio_sqlite3_bind_parameter_count(statement)) parameters")
        }
        for (index, value) in binds.enumerated() {
            let code = sqliteBind(value, at: Int32(index + 1), to: statement)
            guard code == SQLITE_OK else { throw error(code) }
        }
        var rows: [[SQLiteData]] = []
        let width = prepared.columns.names.count
        while true {
            let code = sqlite_nio_sqlite3_step(statement)
            switch code {
            case SQLITE_ROW:
                var row: [SQLiteData] = []
                row.reserveCapacity(width)
                for column in 0..<Int32(width) { row.append(sqliteValue(at: column, of: statement)) }
                rows.append(row)
            case SQLITE_DONE:
                return SQLiteReadResult(columns: prepared.columns, rows: rows)
            default:
                throw error(code)
            }
        }
    }

    /// ``run(sql:binds:)`` for a point read: nil when SQLite refused it (busy, an error, a
    /// statement this connection does not admit), and the caller takes the pool, which reports
    /// errors as sqlite-nio does.
    func read(sql: String, binds: [SQLiteData]) -> SQLiteReadResult? {
        try? run(sql: sql, binds: binds)
    }

    /// Runs a statement that answers no rows (`BEGIN`, `COMMIT`, `ROLLBACK`).
    func execute(_ sql: String) throws {
        _ = try run(sql: sql, binds: [])
    }

    /// Whether a transaction is open on this connection.
    var inTransaction: Bool { sqlite_nio_sqlite3_get_autocommit(handle) == 0 }

    /// How many times SQLite had to prepare a kept statement again (a schema change, or a
    /// plan that depends on a bound value): each costs what keeping them saves.
    var repreparations: Int {
        statements.values.reduce(0) { $0 + Int(sqlite_nio_sqlite3_stmt_status($1.statement, SQLITE_STMTSTATUS_REPREPARE, 0)) }
    }

    /// The kept statements SQLite prepared again, and how often (see ``repreparations``).
    var repreparedStatements: [String: Int] {
        statements.compactMapValues { prepared in
            let count = Int(sqlite_nio_sqlite3_stmt_status(prepared.statement, SQLITE_STMTSTATUS_REPREPARE, 0))
            return count == 0 ? nil : count
        }
    }

    /// How much of the file this connection may read through a memory map (its `mmap_size`),
    /// asked of the file itself: the read connections refuse a `PRAGMA` statement.
    var memoryMapLimit: Int64? {
        var size: Int64 = -1  // negative: report the limit without changing it
        guard sqlite_nio_sqlite3_file_control(handle, "main", SQLITE_FCNTL_MMAP_SIZE, &size) == SQLITE_OK else { return nil }
        return size
    }

    /// Finalizes every statement and closes the handle. The connection is unusable afterwards.
    func close() {
        for prepared in statements.values { sqlite_nio_sqlite3_finalize(prepared.statement) }
        statements = [:]
        sqlite_nio_sqlite3_close_v2(handle)
    }

    private func statement(for sql: String) throws -> PreparedStatement {
        if let prepared = statements[sql] { return prepared }
        var statement: OpaquePointer?
        let code = sqlite_nio_sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else { throw error(code) }
        preparations += 1
        guard admits(statement, sql) else {
            sqlite_nio_sqlite3_finalize(statement)
            throw SQLiteStatementError(code: SQLITE_MISUSE, message: "not a statement this connection runs")
        }
        let count = sqlite_nio_sqlite3_column_count(statement)
        let names = (0..<count).map { sqlite_nio_sqlite3_column_name(statement, $0).map { String(cString: $0) } ?? "" }
        if statements.count >= statementLimit {
            for prepared in statements.values { sqlite_nio_sqlite3_finalize(prepared.statement) }
            statements = [:]
        }
        let prepared = PreparedStatement(statement: statement, columns: SQLiteColumnNames(names))
        statements[sql] = prepared
        return prepared
    }

    static func isSelect(_ sql: String) -> Bool {
        let head = sql.utf8.drop(while: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\t") }).prefix(6)
        return String(decoding: head, as: UTF8.self).uppercased() == "SELECT"
    }

    private func error(_ code: Int32) -> SQLiteStatementError {
        let extended = sqlite_nio_sqlite3_extended_errcode(handle)
        let message = sqlite_nio_sqlite3_errmsg(handle).map { String(cString: $0) } ?? "SQLite error \(code)"
        return SQLiteStatementError(code: extended == 0 ? code : extended, message: message)
    }

    private struct PreparedStatement {
        let statement: OpaquePointer
        let columns: SQLiteColumnNames
    }
}

/// Binds `value` to parameter `index` (from 1) of `statement`; answers SQLite's result code.
func sqliteBind(_ value: SQLiteData, at index: Int32, to statement: OpaquePointer) -> Int32 {
    switch value {
    case .integer(let value): sqlite_nio_sqlite3_bind_int64(statement, index, Int64(value))
    case .float(let value): sqlite_nio_sqlite3_bind_double(statement, index, value)
    case .text(let value): sqlite_nio_sqlite3_bind_text64(statement, index, value, UInt64(value.utf8.count), transientDestructor, UInt8(SQLITE_UTF8))
    case .blob(let value):
        value.withUnsafeReadableBytes { sqlite_nio_sqlite3_bind_blob64(statement, index, $0.baseAddress, UInt64($0.count), transientDestructor) }
    case .null: sqlite_nio_sqlite3_bind_null(statement, index)
    }
}

/// Column `column` of the row `statement` is on, as sqlite-nio represents values.
func sqliteValue(at column: Int32, of statement: OpaquePointer) -> SQLiteData {
    switch sqlite_nio_sqlite3_column_type(statement, column) {
    case SQLITE_INTEGER: return .integer(Int(sqlite_nio_sqlite3_column_int64(statement, column)))
    case SQLITE_FLOAT: return .float(sqlite_nio_sqlite3_column_double(statement, column))
    case SQLITE_TEXT:
        guard let text = sqlite_nio_sqlite3_column_text(statement, column) else { return .null }
        let count = Int(sqlite_nio_sqlite3_column_bytes(statement, column))
        return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
    case SQLITE_BLOB:
        let count = Int(sqlite_nio_sqlite3_column_bytes(statement, column))
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        if let bytes = sqlite_nio_sqlite3_column_blob(statement, column) {
            buffer.writeBytes(UnsafeRawBufferPointer(start: bytes, count: count))
        }
        return .blob(buffer)
    default: return .null
    }
}

/// SQLite copies bound text and blobs (the Swift values do not outlive the call).
private let transientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A statement's column names, shared by all the rows it returns.
final class SQLiteColumnNames: Sendable {
    let names: [String]
    private let index: [String: Int]

    init(_ names: [String]) {
        self.names = names
        // The first of two equal names wins, as in sqlite-nio's rows.
        self.index = Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    }

    func position(of name: String) -> Int? { index[name] }
}

/// What one read answered.
struct SQLiteReadResult: Sendable {
    let columns: SQLiteColumnNames
    let rows: [[SQLiteData]]
}

/// A statement of ``SQLiteKeptConnection`` failed: SQLite's extended result code and message.
struct SQLiteStatementError: Error, Sendable, CustomStringConvertible {
    let code: Int32
    let message: String

    var description: String { "SQLite error \(code): \(message)" }

    /// Another connection holds the lock: the transaction is run on the pool instead.
    var isBusy: Bool { code & 0xFF == SQLITE_BUSY || code & 0xFF == SQLITE_LOCKED }
    /// The disk or the file failed (I/O error, full, cannot open): worth a 503, as the pool's are.
    var isUnavailable: Bool { [SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN].contains(code & 0xFF) }
    /// A `UNIQUE` or `PRIMARY KEY` constraint refused the row.
    var isUniqueViolation: Bool { Self.uniqueCodes.contains(code) }

    /// `SQLITE_CONSTRAINT_PRIMARYKEY`, `_UNIQUE`, `_ROWID` (sqlite3.h builds them with shifts,
    /// which Swift does not import).
    private static let uniqueCodes: Set<Int32> = [SQLITE_CONSTRAINT | (6 << 8), SQLITE_CONSTRAINT | (8 << 8), SQLITE_CONSTRAINT | (10 << 8)]
}
