import Foundation
import Logging
import NIOCore
import PostgresKit
import PostgresNIO
import SQLKit

/// Opens a PostgreSQL database shared by any number of server processes.
///
/// Connections come from postgres-nio's `PostgresClient`. The AsyncKit pool used before lost
/// track of its connections when PostgreSQL restarted under load: leases stayed taken after
/// their connections died, so after a few restarts every request waited the full connection
/// wait and was answered 503 until the process restarted.
enum PostgresStorage {
    /// Connects to `url` (`postgres://user:pass@host:port/db[?sslmode=…]`) with up to `poolSize`
    /// connections, and checks the database answers before returning. A request that waits
    /// `connectionWait` for a free connection fails with ``StorageError/timedOut`` (answered 503).
    static func open(
        url: String, poolSize: Int, searchPath: [String]? = nil, queryDeadline: Duration = .seconds(30),
        connectionWait: Duration = .seconds(10), logger: Logger
    ) async throws -> Database {
        let core: PostgresConnection.Configuration
        do {
            core = try SQLPostgresConfiguration(url: url).coreConfiguration
        } catch {
            throw StorageError.unreachable(redacting(url), reason: "not a postgres:// URL")
        }
        var configuration = try clientConfiguration(core)
        configuration.options.maximumConnections = max(1, poolSize)
        configuration.options.connectTimeout = .seconds(10)
        if let searchPath {
            // A startup parameter, so every connection the pool makes has it from its first query.
            configuration.options.additionalStartupParameters = [("search_path", searchPath.map(quotedIdentifier).joined(separator: ","))]
        }
        // One direct connection first: the pool retries a failing connect forever, while a
        // server that cannot reach its database at start should say why and exit.
        do {
            let probe = try await PostgresConnection.connect(configuration: core, id: 0, logger: logger)
            try? await probe.close()
        } catch {
            throw StorageError.unreachable(redacting(url), reason: String(describing: error))
        }
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        // The pool's own work (connecting, keep-alives, closing idle connections) runs until
        // the database is closed; Database.close cancels it.
        let running = Task { await client.run() }
        let loop = MultiThreadedEventLoopGroup.singleton.any()
        let pooled = PooledPostgresDatabase(client: client, connectionWait: connectionWait, queryDeadline: queryDeadline, logger: logger, eventLoop: loop)
        let withoutDeadlines = PooledPostgresDatabase(client: client, connectionWait: connectionWait, queryDeadline: nil, logger: logger, eventLoop: loop)
        do {
            try await pooled.raw("SELECT 1").run()
        } catch {
            running.cancel()
            await running.value
            throw StorageError.unreachable(redacting(url), reason: String(describing: error))
        }
        // Every query gets a deadline: a connection the server dropped mid-query can leave it
        // pending forever, and with it a request, a flush or the shutdown.
        return Database(
            sql: pooled, withoutDeadlines: withoutDeadlines, driver: .postgres,
            close: {
                running.cancel()
                await running.value
            }
        )
    }

    /// The pool's configuration for the connection settings a URL gave.
    private static func clientConfiguration(_ core: PostgresConnection.Configuration) throws -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        switch (core.tls.isEnforced, core.tls.isAllowed, core.tls.sslContext) {
        case (true, _, let context?): tls = .require(context.configuration)
        case (false, true, let context?): tls = .prefer(context.configuration)
        default: tls = .disable
        }
        if let host = core.host, let port = core.port {
            return PostgresClient.Configuration(host: host, port: port, username: core.username, password: core.password, database: core.database, tls: tls)
        }
        if let socket = core.unixSocketPath {
            return PostgresClient.Configuration(unixSocketPath: socket, username: core.username, password: core.password, database: core.database)
        }
        throw StorageError.unreachable("postgres://…", reason: "the URL names neither a host nor a socket")
    }

    private static func quotedIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The URL without its password, for error messages and logs.
    static func redacting(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return "postgres://…" }
        if components.password != nil { components.password = "***" }
        return components.string ?? "postgres://…"
    }
}
