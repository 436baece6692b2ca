import NIOCore
import SQLiteNIO
// sqlite-nio's vendored SQLite: the very library copy its pool uses, so SQLite's in-process
// bookkeeping of file locks covers both (two copies of SQLite in one process would not see
// each other's POSIX locks and could corrupt the file).
import VaporCSQLite

/// One raw SQLite connection for point reads, keeping every statement it prepares.
///
/// sqlite-nio parses and plans each query anew (about a third of a validate's database time)
/// and runs it on its thread pool. This connection prepares a statement once, resets it after
/// each use, and runs on the calling thread: a point read by key is a few B-tree pages and
/// never waits for a lock in WAL mode.
///
/// `@unchecked Sendable`: the handle and the statement table are used by one thread at a time,
/// because only ``SQLitePointReaders`` hands connections out, one borrower each, under its lock.
final class SQLiteReadConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    private var statements: [String: PreparedRead] = [:]
    /// Statements this connection has prepared (each should be once).
    private(set) var preparations = 0
    /// Beyond this many distinct statements the table starts over (point reads use a handful).
    static let statementLimit = 32

    private init(handle: OpaquePointer) {
        self.handle = handle
    }

    /// Opens `path` (which must exist), read-only in practice (`query_only`), or nil when it cannot.
    static func open(path: String) -> SQLiteReadConnection? {
        var handle: OpaquePointer?
        // NOMUTEX: SQLite's per-connection mutex is redundant with the one-borrower rule.
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
        guard sqlite_nio_sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK, let handle else {
            if let handle { sqlite_nio_sqlite3_close_v2(handle) }
            return nil
        }
        let connection = SQLiteReadConnection(handle: handle)
        // No busy wait on the caller's thread: a busy answer falls back to the pool.
        // query_only: a statement that would write fails instead of writing.
        for pragma in ["PRAGMA busy_timeout = 0", "PRAGMA query_only = ON", "PRAGMA cache_size = -16384", "PRAGMA mmap_size = 1073741824"] {
            guard sqlite_nio_sqlite3_exec(handle, pragma, nil, nil, nil) == SQLITE_OK else {
                connection.close()
                return nil
            }
        }
        return connection
    }

    /// Runs one `SELECT` and answers all its rows, or nil when SQLite refused it (busy, an
    /// error, a statement that is not a read): the caller then takes the ordinary path, which
    /// reports errors as sqlite-nio does. Rows are collected before any is handed on, so a
    /// fallback never repeats a row.
    func read(sql: String, binds: [SQLiteData]) -> SQLiteReadResult? {
        guard let prepared = statement(for: sql) else { return nil }
        let statement = prepared.statement
        // Every parameter is bound anew on each use, so the bindings are not cleared afterwards:
        // `sqlite3_clear_bindings` expires a statement whose plan looked at a bound value, which
        // would make SQLite prepare it again every time.
        defer { sqlite_nio_sqlite3_reset(statement) }
        guard binds.count == Int(sqlite_nio_sqlite3_bind_parameter_count(statement)) else { return nil }
        for (index, value) in binds.enumerated() {
            guard bind(value, at: Int32(index + 1), to: statement) == SQLITE_OK else { return nil }
        }
        var rows: [[SQLiteData]] = []
        let width = prepared.columns.names.count
        while true {
            switch sqlite_nio_sqlite3_step(statement) {
            case SQLITE_ROW:
                var row: [SQLiteData] = []
                row.reserveCapacity(width)
                for column in 0..<Int32(width) { row.append(value(at: column, of: statement)) }
                rows.append(row)
            case SQLITE_DONE:
                return SQLiteReadResult(columns: prepared.columns, rows: rows)
            default:
                return nil
            }
        }
    }

    /// How many times SQLite had to prepare a kept statement again (a schema change, or a
    /// plan that depends on a bound value): each costs what keeping them saves.
    var repreparations: Int {
        statements.values.reduce(0) { $0 + Int(sqlite_nio_sqlite3_stmt_status($1.statement, SQLITE_STMTSTATUS_REPREPARE, 0)) }
    }

    /// Finalizes every statement and closes the handle. The connection is unusable afterwards.
    func close() {
        for prepared in statements.values { sqlite_nio_sqlite3_finalize(prepared.statement) }
        statements = [:]
        sqlite_nio_sqlite3_close_v2(handle)
    }

    private func statement(for sql: String) -> PreparedRead? {
        if let prepared = statements[sql] { return prepared }
        var statement: OpaquePointer?
        guard sqlite_nio_sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK,
              let statement else { return nil }
        preparations += 1
        // Only plain reads: BEGIN, PRAGMA and the like are "read-only" to SQLite but change the connection.
        guard sqlite_nio_sqlite3_stmt_readonly(statement) != 0, Self.isSelect(sql) else {
            sqlite_nio_sqlite3_finalize(statement)
            return nil
        }
        let count = sqlite_nio_sqlite3_column_count(statement)
        let names = (0..<count).map { sqlite_nio_sqlite3_column_name(statement, $0).map { String(cString: $0) } ?? "" }
        if statements.count >= Self.statementLimit {
            for prepared in statements.values { sqlite_nio_sqlite3_finalize(prepared.statement) }
            statements = [:]
        }
        let prepared = PreparedRead(statement: statement, columns: SQLiteColumnNames(names))
        statements[sql] = prepared
        return prepared
    }

    static func isSelect(_ sql: String) -> Bool {
        let head = sql.utf8.drop(while: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\t") }).prefix(6)
        return String(decoding: head, as: UTF8.self).uppercased() == "SELECT"
    }

    private func bind(_ value: SQLiteData, at index: Int32, to statement: OpaquePointer) -> Int32 {
        switch value {
        case .integer(let value): sqlite_nio_sqlite3_bind_int64(statement, index, Int64(value))
        case .float(let value): sqlite_nio_sqlite3_bind_double(statement, index, value)
        case .text(let value): sqlite_nio_sqlite3_bind_text64(statement, index, value, UInt64(value.utf8.count), transientDestructor, UInt8(SQLITE_UTF8))
        case .blob(let value):
            value.withUnsafeReadableBytes { sqlite_nio_sqlite3_bind_blob64(statement, index, $0.baseAddress, UInt64($0.count), transientDestructor) }
        case .null: sqlite_nio_sqlite3_bind_null(statement, index)
        }
    }

    private func value(at column: Int32, of statement: OpaquePointer) -> SQLiteData {
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
}

/// SQLite copies bound text and blobs (the Swift values do not outlive the call).
private let transientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

private struct PreparedRead {
    let statement: OpaquePointer
    let columns: SQLiteColumnNames
}

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
