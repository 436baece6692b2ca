import Logging
import NIOConcurrencyHelpers
import NIOCore
import SQLKit

/// An `SQLDatabase` whose every query gives up after `deadline` (``withDeadline(_:_:)``): for a
/// networked database, where a query can wait forever on a connection that is gone.
struct DeadlineSQLDatabase: SQLDatabase {
    let base: any SQLDatabase
    let deadline: Duration

    var logger: Logger { base.logger }
    var eventLoop: any EventLoop { base.eventLoop }
    var version: (any SQLDatabaseReportedVersion)? { base.version }
    var dialect: any SQLDialect { base.dialect }
    var queryLogLevel: Logger.Level? { base.queryLogLevel }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> ()) -> EventLoopFuture<Void> {
        let promise = base.eventLoop.makePromise(of: Void.self)
        promise.completeWithTask { try await execute(sql: query, onRow) }
        return promise.futureResult
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> ()) async throws {
        let base = self.base
        // Rows arrive only while the caller still waits: after the deadline they are dropped.
        let gate = RowGate(onRow)
        defer { gate.close() }
        try await withDeadline(deadline) { try await base.execute(sql: query, { gate.forward($0) }) }
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        // A session's queries each get the deadline; the whole transaction has its own (Database.write).
        let deadline = self.deadline
        return try await base.withSession { session in try await closure(DeadlineSQLDatabase(base: session, deadline: deadline)) }
    }
}

/// Passes rows on until closed.
private final class RowGate: Sendable {
    private let onRow: NIOLockedValueBox<(@Sendable (any SQLRow) -> ())?>

    init(_ onRow: @escaping @Sendable (any SQLRow) -> ()) {
        self.onRow = NIOLockedValueBox(onRow)
    }

    func forward(_ row: any SQLRow) {
        onRow.withLockedValue { $0 }?(row)
    }

    func close() {
        onRow.withLockedValue { $0 = nil }
    }
}
