import Logging
import NIOCore
import SQLKit

/// An `SQLDatabase` around another one, answering for it in everything but how a statement is
/// run (a deadline per query, a record of each statement in tests).
protocol SQLDatabaseWrapper: SQLDatabase {
    var base: any SQLDatabase { get }
}

extension SQLDatabaseWrapper {
    var logger: Logger { base.logger }
    var eventLoop: any EventLoop { base.eventLoop }
    var version: (any SQLDatabaseReportedVersion)? { base.version }
    var dialect: any SQLDialect { base.dialect }
    var queryLogLevel: Logger.Level? { base.queryLogLevel }
}
