@preconcurrency import AsyncKit
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresKit
import SQLKit

/// Opens a PostgreSQL database shared by any number of server processes.
enum PostgresStorage {
    /// Connects to `url` (`postgres://user:pass@host:port/db[?sslmode=…]`) with a pool of about
    /// `poolSize` connections, and checks the database answers before returning. A request
    /// that waits `connectionWait` for a free connection fails (the server answers 503).
    static func open(
        url: String, poolSize: Int, searchPath: [String]? = nil, queryDeadline: Duration = .seconds(30),
        connectionWait: TimeAmount = .seconds(10), logger: Logger
    ) async throws -> Database {
        var configuration: SQLPostgresConfiguration
        do {
            configuration = try SQLPostgresConfiguration(url: url)
        } catch {
            throw StorageError.unreachable(redacting(url), reason: "not a postgres:// URL")
        }
        if let searchPath { configuration.searchPath = searchPath }
        let group = MultiThreadedEventLoopGroup.singleton
        // The pool keeps a sub-pool per event loop (the singleton group has one per core).
        let loops = max(1, System.coreCount)
        let perLoop = max(1, (poolSize + loops - 1) / loops)
        let pool = PoolBox(EventLoopGroupConnectionPool(
            source: PostgresConnectionSource(sqlConfiguration: configuration),
            maxConnectionsPerEventLoop: perLoop, requestTimeout: connectionWait, logger: logger, on: group
        ))
        let sql = pool.pool.database(logger: logger).sql(queryLogLevel: nil)
        do {
            try await sql.raw("SELECT 1").run()
        } catch {
            try? await pool.pool.shutdownAsync()
            throw StorageError.unreachable(redacting(url), reason: String(describing: error))
        }
        // Every query gets a deadline: a connection the server dropped mid-query can leave it
        // pending forever, and with it a request, a flush or the shutdown.
        return Database(sql: DeadlineSQLDatabase(base: sql, deadline: queryDeadline), withoutDeadlines: sql, driver: .postgres, close: { try? await pool.pool.shutdownAsync() })
    }

    /// The URL without its password, for error messages and logs.
    static func redacting(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return "postgres://…" }
        if components.password != nil { components.password = "***" }
        return components.string ?? "postgres://…"
    }
}

/// async-kit's pool is safe to use from any thread (each sub-pool is confined to its event
/// loop and hops there itself) but is not annotated Sendable; this box says so in one place.
final class PoolBox: @unchecked Sendable {
    let pool: EventLoopGroupConnectionPool<PostgresConnectionSource>
    init(_ pool: EventLoopGroupConnectionPool<PostgresConnectionSource>) { self.pool = pool }
}
