import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresKit
import PostgresNIO
import SQLKit

/// An `SQLDatabase` over a `PostgresClient` pool: each query, or each session, leases one
/// connection for its length. Waiting for a lease is bounded (the pool itself waits without
/// limit), and so is each query when `queryDeadline` is set (``GuardedConnectionSQLDatabase``).
struct PooledPostgresDatabase: SQLDatabase {
    let client: PostgresClient
    let connectionWait: Duration
    /// nil for migrations: waiting for another process's migration lock, or a long
    /// `CREATE INDEX`, is expected there.
    let queryDeadline: Duration?
    let logger: Logger
    /// For sql-kit's future-based calls only; queries run on their connection's loop.
    let eventLoop: any EventLoop

    var dialect: any SQLDialect { PostgresDialect() }
    var queryLogLevel: Logger.Level? { nil }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> ()) -> EventLoopFuture<Void> {
        eventLoop.makeFutureWithTask { try await self.execute(sql: query, onRow) }
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> ()) async throws {
        try await withConnection { try await $0.execute(sql: query, onRow) }
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        try await withConnection(closure)
    }

    /// Runs `body` on a leased connection, or throws ``StorageError/timedOut`` when none is free
    /// within `connectionWait` (the lease request is then withdrawn from the pool's queue).
    private func withConnection<R>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        let leased = LeaseFlag()
        let (client, wait, deadline, logger) = (self.client, self.connectionWait, self.queryDeadline, self.logger)
        return try await withThrowingTaskGroup(of: Outcome<R>.self) { group in
            group.addTask {
                try await client.withConnection { connection in
                    leased.set()
                    let sql = connection.sql(queryLogLevel: nil, logger: logger)
                    return Outcome.done(try await body(GuardedConnectionSQLDatabase(base: sql, connection: connection, deadline: deadline)))
                }
            }
            group.addTask {
                try await Task.sleep(for: wait)
                if leased.isSet { return .watchEnded }
                throw StorageError.timedOut
            }
            while let next = try await group.next() {
                if case .done(let result) = next {
                    group.cancelAll()
                    return result
                }
            }
            throw StorageError.timedOut
        }
    }

    private enum Outcome<R>: @unchecked Sendable {
        // @unchecked: R is handed from the child task to this call exactly once, through the
        // task group, never shared.
        case done(R)
        case watchEnded
    }
}

/// Set once a lease is granted; read by the wait's watchdog.
private final class LeaseFlag: Sendable {
    private let value = NIOLockedValueBox(false)
    func set() { value.withLockedValue { $0 = true } }
    var isSet: Bool { value.withLockedValue { $0 } }
}
