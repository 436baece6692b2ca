import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SQLKit
import SQLiteKit

/// Opens the embedded SQLite database: a small pool of connections in WAL mode.
enum SQLiteStorage {
    /// Opens `path` (created if missing), or a private in-memory database when `path` is nil.
    ///
    /// An in-memory database lives in one connection (SQLite gives each `:memory:` connection
    /// its own database), so its pool has one connection.
    static func open(path: String?, poolSize: Int, logger: Logger) async throws -> (
        database: any SQLDatabase, pointReads: (any SQLDatabase)?, hotWriter: SQLiteHotWriter?, close: @Sendable () async -> Void
    ) {
        if let path, !FileManager.default.fileExists(atPath: path) {
            // Customer emails live here: create the file owner-only. SQLite gives its -wal and
            // -shm files the database file's permissions.
            _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        let storage: SQLiteConnection.Storage = path.map { .file(path: $0) } ?? .memory
        let size = path == nil ? 1 : max(1, poolSize)
        // Each database runs its statements on threads of its own (as many as the machine has
        // cores, as the shared pool would, and never more than its connections): a statement
        // waiting out another database's busy lock never holds up this one's, which matters
        // when one process opens several (tests, backups, restores).
        let threadPool = NIOThreadPool(numberOfThreads: min(size, max(1, System.coreCount)))
        threadPool.start()
        var connections: [SQLiteConnection] = []
        do {
            for index in 0..<size {
                let connection = try await SQLiteConnection.open(
                    storage: storage, threadPool: threadPool, logger: logger, on: MultiThreadedEventLoopGroup.singleton.any()
                )
                connections.append(connection)
                // busy_timeout first: it replaces sqlite-nio's default handler, which spins without sleeping.
                _ = try await connection.query("PRAGMA busy_timeout = 5000")
                if index == 0 && path != nil {
                    // Persistent in the file: readers and the writer stop blocking each other.
                    _ = try await connection.query("PRAGMA journal_mode = WAL")
                }
                // In WAL mode NORMAL is durable against application crashes; only an OS crash or power
                // loss can lose the last commits. FULL would fsync every commit.
                _ = try await connection.query("PRAGMA synchronous = NORMAL")
                // Reads of a large database come from memory: 64 MiB of page cache per connection,
                // and the file mapped (up to 1 GiB) so cache misses cost a page fault, not a read().
                _ = try await connection.query("PRAGMA cache_size = -65536")
                _ = try await connection.query("PRAGMA mmap_size = 1073741824")
                _ = try await connection.query("PRAGMA foreign_keys = ON")
            }
        } catch {
            await closeAll(connections)
            try? await threadPool.shutdownGracefully()
            throw error
        }
        // The threads end once every connection is closed: a connection in use when the pool
        // closes is closed when it comes back, on these threads.
        let open = NIOLockedValueBox(size)
        let closed: @Sendable (Int) async -> Void = { count in
            if open.withLockedValue({ $0 -= count; return $0 }) == 0 { try? await threadPool.shutdownGracefully() }
        }
        let pool = AsyncResourcePool(connections, discard: { connection in Task { await closeAll([connection]); await closed(1) } })
        let database = PooledSQLiteDatabase(pool: pool, logger: logger, eventLoop: MultiThreadedEventLoopGroup.singleton.any())
        // A file's point reads get connections of their own, one per thread that may read at
        // once (an in-memory database exists only inside its one pooled connection).
        let readers = path.map { SQLitePointReaders(path: $0, limit: System.coreCount + 2) }
        // And the hot write transactions one of their own, on a thread of its own.
        let hotWriter = path.map { SQLiteHotWriter(path: $0) }
        let close: @Sendable () async -> Void = {
            readers?.close()
            hotWriter?.close()
            let idle = pool.close()
            await closeAll(idle)
            await closed(idle.count)
        }
        return (database, readers.map { SQLitePointReadDatabase(readers: $0, fallback: database) }, hotWriter, close)
    }
}

/// Closes connections in a task of their own: closing must finish even when the caller is being
/// cancelled (an unclosed sqlite-nio connection asserts when it is freed).
private func closeAll(_ connections: [SQLiteConnection]) async {
    await Task {
        for connection in connections { try? await connection.close() }
    }.value
}

/// An `SQLDatabase` over the pool: each statement borrows any connection; `withSession` holds
/// one connection exclusively, which is what makes a transaction a transaction.
struct PooledSQLiteDatabase: SQLiteDatabaseDefaults {
    let pool: AsyncResourcePool<SQLiteConnection>
    let logger: Logger
    let eventLoop: any EventLoop

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        try await pool.withResource { connection in
            try await connection.sql(queryLogLevel: nil).execute(sql: query, onRow)
        }
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        try await pool.withResource { connection in
            try await closure(connection.sql(queryLogLevel: nil))
        }
    }
}
