import NIOCore
import PostgresNIO
import SQLiteNIO

/// Storage failures the service layer reacts to.
public struct StorageError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String

    /// The database is closed (the server is shutting down).
    public static let closed = Self(description: "database is closed")
    /// A database call passed its deadline (the database or the connection to it is stuck).
    public static let timedOut = Self(description: "database call timed out")
    /// The connection a query was to run on had closed (the database restarted or dropped it).
    public static let connectionLost = Self(description: "database connection lost")
    /// A stored value could not be read back (corruption or a newer schema).
    public static func corrupt(_ what: String) -> Self { Self(description: "stored \(what) is unreadable") }
    /// The schema is newer than this build understands: a downgrade, refused. Older code on a
    /// newer schema could write rows the newer release misreads, and nothing undoes a migration.
    public static func unknownMigration(_ name: String, newestKnown: String? = nil) -> Self {
        let known = newestKnown.map { " (this build knows migrations up to \($0))" } ?? ""
        return Self(description: "database has migration \(name), which this build does not know\(known): it was migrated by a newer Keylight. Downgrades are refused: run the newer release, or restore the backup taken before the upgrade")
    }

    /// The database cannot be reached (at start: a clear error and a non-zero exit).
    public static func unreachable(_ target: String, reason: String) -> Self {
        Self(description: "cannot reach the database at \(target): \(reason)")
    }

    /// A shared database needs a master key every process has.
    public static let noMasterKey = Self(description: "with --database-url, set KEYLIGHT_MASTER_KEY (base64 of 32 bytes) or --master-key-file, the same for every process")

    /// True when `error` is the database refusing a duplicate under a UNIQUE or PRIMARY KEY
    /// constraint. Each driver spells this differently; this is the one place that knows how.
    static func isUniqueViolation(_ error: any Error) -> Bool {
        if let error = error as? SQLiteStatementError { return error.isUniqueViolation }
        if let error = error as? SQLiteError {
            switch error.reason {
            case .constraintUniqueFailed, .constraintPrimaryKeyFailed, .constraintUniqueRowIDFailed: return true
            default: return false
            }
        }
        if let error = error as? PSQLError, error.code == .server {
            return error.serverInfo?[.sqlState] == "23505"  // unique_violation
        }
        return false
    }

    /// True when `error` means the database cannot be reached right now (closed, locked past
    /// the busy timeout, connection lost): worth a 503 and a retry, not a 500.
    static func isUnavailable(_ error: any Error) -> Bool {
        if let error = error as? SQLiteStatementError { return error.isBusy || error.isUnavailable }
        if let error = error as? StorageError { return error == .closed || error == .timedOut || error == .connectionLost }
        if let error = error as? SQLiteError {
            switch error.reason {
            case .busy, .busyTimeout, .busyInSnapshot, .busyInRecovery, .locked, .ioError, .cantOpen, .full: return true
            default: return false
            }
        }
        if let error = error as? PSQLError {
            switch error.code {
            case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed: return true
            case .server:
                // 08xxx connection exceptions, 57P0x shutdown/cannot connect now, 53xxx insufficient resources.
                let state = error.serverInfo?[.sqlState] ?? ""
                return state.hasPrefix("08") || state.hasPrefix("57P") || state.hasPrefix("53")
            default: return false
            }
        }
        return error is NIOConnectionError || error is ChannelError
    }
}
