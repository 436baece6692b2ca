import Logging
import NIOCore
import SQLKit
import SQLiteKit

/// What every `SQLDatabase` over SQLite here has in common: SQLite's dialect, no statement
/// logging, and the future-based `execute` answered by the async one.
protocol SQLiteDatabaseDefaults: SQLDatabase {}

extension SQLiteDatabaseDefaults {
    var dialect: any SQLDialect { SQLiteDialect() }
    var version: (any SQLDatabaseReportedVersion)? { nil }
    /// Statements are never logged with their binds: they carry key hashes and sealed secrets.
    var queryLogLevel: Logger.Level? { nil }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<Void> {
        eventLoop.makeFutureWithTask { try await self.execute(sql: query, onRow) }
    }
}
