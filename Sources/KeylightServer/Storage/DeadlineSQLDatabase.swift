import Logging
import NIOConcurrencyHelpers
import NIOCore
import SQLKit

/// An `SQLDatabase` whose every query gives up after `deadline` with ``StorageError/timedOut``: for a
/// networked database, where a query can wait forever on a connection that is gone.
struct DeadlineSQLDatabase: SQLDatabase {
    let base: any SQLDatabase
    let deadline: Duration

    var logger: Logger { base.logger }
    var eventLoop: any EventLoop { base.eventLoop }
    var version: (any SQLDatabaseReportedVersion)? { base.version }
    var dialect: any SQLDialect { base.dialect }
    var queryLogLevel: Logger.Level? { base.queryLogLevel }

    /// The query's future, failed with ``StorageError/timedOut`` if it has not completed by the
    /// deadline: a timer on the event loop, no task per query (a hop through a busy cooperative
    /// pool while a transaction holds row locks would cost every other writer).
    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> ()) -> EventLoopFuture<Void> {
        let loop = base.eventLoop
        let promise = loop.makePromise(of: Void.self)
        // Rows arrive only while the caller still waits: after the deadline they are dropped.
        let gate = RowGate(onRow)
        base.execute(sql: query, { gate.forward($0) }).whenComplete { result in
            if gate.close() { promise.completeWith(result) }
        }
        let timer = loop.scheduleTask(in: TimeAmount(deadline)) {
            if gate.close() { promise.fail(StorageError.timedOut) }
        }
        promise.futureResult.whenComplete { _ in timer.cancel() }
        return promise.futureResult
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> ()) async throws {
        try await execute(sql: query, onRow).get()
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        // A session's queries each get the deadline; the whole transaction has its own (Database.write).
        let deadline = self.deadline
        return try await base.withSession { session in try await closure(DeadlineSQLDatabase(base: session, deadline: deadline)) }
    }
}

/// Passes rows on until closed; closing answers whether this call was the one that closed it,
/// so exactly one of "the query finished" and "the deadline passed" completes the promise.
private final class RowGate: Sendable {
    private let onRow: NIOLockedValueBox<(@Sendable (any SQLRow) -> ())?>

    init(_ onRow: @escaping @Sendable (any SQLRow) -> ()) {
        self.onRow = NIOLockedValueBox(onRow)
    }

    func forward(_ row: any SQLRow) {
        onRow.withLockedValue { $0 }?(row)
    }

    func close() -> Bool {
        onRow.withLockedValue { onRow in
            defer { onRow = nil }
            return onRow != nil
        }
    }
}
