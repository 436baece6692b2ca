import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
import SQLKit

/// One leased PostgreSQL connection whose every query must finish within `deadline` (when set;
/// migrations have none) and is refused at once once the connection has closed. A query
/// that does not is failed with ``StorageError/timedOut`` by closing its connection: a
/// connection PostgreSQL dropped mid-query (a restart, a failover) can leave the query pending
/// forever, and giving up on the query alone would keep the connection leased, so each such
/// query would take one connection from the pool for good.
struct GuardedConnectionSQLDatabase: SQLDatabaseWrapper {
    let base: any SQLDatabase
    let connection: PostgresConnection
    let deadline: Duration?

    /// A timer on the connection's event loop, no task per query (a hop through a busy
    /// cooperative pool while a transaction holds row locks would cost every other writer).
    ///
    /// A closed connection fails the query at once: postgres-nio hands a query to its channel
    /// without a write promise, so a query written after the channel closed (the ROLLBACK after
    /// PostgreSQL dropped the connection mid-transaction) was never answered. Checked and written
    /// on the connection's event loop, where the channel cannot close in between.
    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> ()) -> EventLoopFuture<Void> {
        let (base, connection, logger, deadline) = (self.base, self.connection, self.logger, self.deadline)
        let loop = eventLoop
        return loop.flatSubmit {
            guard !connection.isClosed else { return loop.makeFailedFuture(StorageError.connectionLost) }
            guard let deadline else { return base.execute(sql: query, onRow) }
            let expired = NIOLockedValueBox(false)
            let timer = loop.scheduleTask(in: TimeAmount(deadline)) {
                expired.withLockedValue { $0 = true }
                logger.warning("database query passed its deadline; closing its connection")
                connection.close().whenComplete { _ in }
            }
            return base.execute(sql: query, onRow)
                .always { _ in timer.cancel() }
                .flatMapErrorThrowing { error in
                    throw expired.withLockedValue { $0 } ? StorageError.timedOut : error
                }
        }
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> ()) async throws {
        try await execute(sql: query, onRow).get()
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        try await closure(self)
    }
}
