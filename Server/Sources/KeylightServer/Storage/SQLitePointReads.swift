import Logging
import NIOConcurrencyHelpers
import NIOCore
import SQLKit
import SQLiteKit

/// The hot reads of a file database (a validate's license lookup): statements prepared once per
/// connection and run on the caller's thread. Everything else, every write and every
/// transaction goes through the ordinary pool, and so does any read this path cannot answer.
///
/// Only for point reads by key: a statement that scans would hold the caller's thread.
struct SQLitePointReadDatabase: SQLiteDatabaseDefaults {
    let readers: SQLitePointReaders
    /// The pool: sessions, and reads the readers refused.
    let fallback: any SQLDatabase
    private let encoder = SQLiteBindEncoder()
    private let decoder = SQLiteDataDecoder()
    /// ``Database/grantQuery(keyHash:tenantId:productId:instanceId:extraColumns:lock:)`` as SQL,
    /// serialised once: building and serialising it per validate cost about 4 µs.
    private let grantSQL: String

    init(readers: SQLitePointReaders, fallback: any SQLDatabase) {
        self.readers = readers
        self.fallback = fallback
        let query = fallback.serialize(Database.grantQuery(keyHash: "", tenantId: "", productId: "", instanceId: "", lock: ""))
        // The binds ``grant(keyHash:tenantId:productId:instanceId:)`` passes, in this order.
        precondition(query.binds.count == 4, "the grant query's binds changed")
        grantSQL = query.sql
    }

    /// A license's grant, read without sql-kit; nil when this path cannot answer (the caller
    /// then asks through sql-kit), `.some(nil)` when there is no such license.
    func grant(keyHash: String, tenantId: String, productId: String, instanceId: String?) throws -> LicenseGrant?? {
        // The query binds the instance (its LEFT JOIN) first, then the WHERE's three.
        guard let result = readers.read(sql: grantSQL, binds: [.text(instanceId ?? ""), .text(keyHash), .text(tenantId), .text(productId)]) else {
            return nil
        }
        guard let values = result.rows.first else { return .some(nil) }
        return .some(try LicenseGrant(row: SQLiteReadRow(columns: result.columns, values: values, decoder: decoder)))
    }

    var logger: Logger { fallback.logger }
    var eventLoop: any EventLoop { fallback.eventLoop }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        let (sql, binds) = serialize(query)
        if let values = try? binds.map({ try encoder.encode($0) }), let result = readers.read(sql: sql, binds: values) {
            for values in result.rows {
                onRow(SQLiteReadRow(columns: result.columns, values: values, decoder: decoder))
            }
            return
        }
        try await fallback.execute(sql: query, onRow)
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        try await fallback.withSession(closure)
    }
}

/// Read connections to one database file, each lent to one caller at a time. When all are lent
/// (or the file cannot be opened) a read is refused and takes the pool instead: nobody waits here.
final class SQLitePointReaders: Sendable {
    private let path: String
    private let limit: Int
    private let state = NIOLockedValueBox(State())

    private struct State {
        var idle: [SQLiteKeptConnection] = []
        var open = 0
        var closed = false
    }

    /// `limit`: connections open at most (one per thread that reads at the same moment).
    init(path: String, limit: Int) {
        self.path = path
        self.limit = limit
    }

    /// The rows of `sql`, or nil when no connection is free or SQLite refused the statement.
    func read(sql: String, binds: [SQLiteData]) -> SQLiteReadResult? {
        guard let connection = borrow() else { return nil }
        let result = connection.read(sql: sql, binds: binds)
        giveBack(connection)
        return result
    }

    /// Closes the idle connections now and each lent one when it comes back.
    func close() {
        let idle = state.withLockedValue { state in
            state.closed = true
            state.open -= state.idle.count
            defer { state.idle = [] }
            return state.idle
        }
        for connection in idle { connection.close() }
    }

    var openConnections: Int { state.withLockedValue { $0.open } }

    private enum Lending {
        case idle(SQLiteKeptConnection)
        case openOne
        case none
    }

    private func borrow() -> SQLiteKeptConnection? {
        let lending = state.withLockedValue { state -> Lending in
            if state.closed { return .none }
            if let connection = state.idle.popLast() { return .idle(connection) }
            guard state.open < limit else { return .none }
            state.open += 1
            return .openOne
        }
        switch lending {
        case .idle(let connection): return connection
        case .none: return nil
        case .openOne:
            if let connection = SQLiteKeptConnection.openForReads(path: path) { return connection }
            state.withLockedValue { $0.open -= 1 }
            return nil
        }
    }

    private func giveBack(_ connection: SQLiteKeptConnection) {
        let closing = state.withLockedValue { state in
            if state.closed {
                state.open -= 1
                return true
            }
            state.idle.append(connection)
            return false
        }
        if closing { connection.close() }
    }
}

/// A row of ``SQLiteKeptConnection``, decoded exactly as sqlite-kit decodes the pool's rows.
struct SQLiteReadRow: SQLRow {
    let columns: SQLiteColumnNames
    let values: [SQLiteData]
    let decoder: SQLiteDataDecoder

    var allColumns: [String] { columns.names }

    func contains(column: String) -> Bool { columns.position(of: column) != nil }

    func decodeNil(column: String) throws -> Bool {
        guard let position = columns.position(of: column) else { return true }
        return values[position] == .null
    }

    func decode<D: Decodable>(column: String, as type: D.Type) throws -> D {
        guard let position = columns.position(of: column) else {
            throw DecodingError.keyNotFound(SQLiteReadColumn(column), .init(codingPath: [], debugDescription: "No column \(column)"))
        }
        // The common cases without a Decoder (most of a grant's columns), giving what sqlite-kit's
        // decoder gives for them; anything else goes through that decoder.
        switch values[position] {
        case .text(let text) where D.self == String.self:
            return unsafeBitCast(text, to: D.self)
        case .integer(let integer) where D.self == Int.self:
            return unsafeBitCast(integer, to: D.self)
        case .integer(let integer) where D.self == Int64.self:
            return unsafeBitCast(Int64(integer), to: D.self)
        case .integer(let integer) where D.self == Bool.self && (integer == 0 || integer == 1):
            return unsafeBitCast(integer == 1, to: D.self)
        default:
            return try decoder.decode(D.self, from: values[position])
        }
    }
}

private struct SQLiteReadColumn: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
