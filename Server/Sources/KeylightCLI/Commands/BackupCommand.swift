import ArgumentParser
import Foundation
import KeylightServer
import Logging

struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Back up the SQLite database while the server runs, or check a backup.",
        discussion: """
        keylight backup --db PATH --to FILE   writes a consistent copy (SQLite's VACUUM INTO, never a \
        file copy) while the server goes on serving, mode 0600, and checks it.
        keylight backup --verify FILE         checks a backup: SQLite's integrity check, the schema \
        version and the catalogue's counts, printed as JSON.
        The master key is not in the backup, on purpose: keep it apart (keylight restore needs it). \
        Release files are not in it either: back up the --artifacts-dir folder (keylight-artifacts \
        beside the database by default) with your file backups; its files never change once written. \
        PostgreSQL is backed up with pg_dump (see docs/operating/backups.md). For scheduled backups: keylight serve \
        --backup-dir DIR --backup-every 1h --backup-keep 48.
        """
    )

    @Option(name: .customLong("db"), help: "The SQLite database to back up.")
    var databasePath = "./keylight.sqlite"

    @Option(help: "Where to write the backup (a new file).")
    var to: String?

    @Option(help: "Check this backup instead of writing one.")
    var verify: String?

    @Flag(help: "Replace the file at --to if there is one.")
    var force = false

    func validate() throws {
        guard (to == nil) != (verify == nil) else { throw ValidationError("give either --to FILE (back up) or --verify FILE (check a backup)") }
    }

    func run() async throws {
        let logger = Logger(label: "keylight")
        try await reportingInputFailuresAsync {
            let started = ContinuousClock.now
            let summary = if let verify {
                try await Backups.verify(verify, logger: logger)
            } else {
                try await Backups.backup(databasePath: databasePath, to: to!, replacing: force, logger: logger)
            }
            Standard.line(summary.json)
            let elapsed = ContinuousClock.now - started
            Standard.error("keylight: \(verify == nil ? "backed up to \(to!)" : "\(verify!) is a sound backup") in \(elapsed.formatted(.units(allowed: [.seconds, .milliseconds], width: .abbreviated)))")
            if verify == nil {
                Standard.error("keylight: release files (--artifacts-dir) are not in the backup: copy that folder with your file backups")
            }
        }
    }
}

struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a backup into a new SQLite database.",
        discussion: """
        Checks the backup whole before writing anything: SQLite's integrity check, the schema, and that \
        the master key opens every sealed signing key in it (a wrong key is refused, and nothing is \
        written). An existing database is replaced only with --force. Then start the server on it with \
        the same master key: keylight serve --db PATH --master-key-file KEY.
        """
    )

    @Option(help: "The backup to restore.")
    var from: String

    @Option(name: .customLong("db"), help: "The database to create.")
    var databasePath: String

    @Option(help: "The master key the backed-up server used (base64 of 32 bytes, a 0600 file).")
    var masterKeyFile: String

    @Flag(help: "Replace an existing database at --db (and its write-ahead log).")
    var force = false

    func run() async throws {
        let logger = Logger(label: "keylight")
        try await reportingInputFailuresAsync {
            let started = ContinuousClock.now
            let summary = try await Backups.restore(from: from, to: databasePath, masterKeyPath: masterKeyFile, replacing: force, logger: logger)
            Standard.line(summary.json)
            let elapsed = ContinuousClock.now - started
            Standard.error("keylight: restored \(from) into \(databasePath) in \(elapsed.formatted(.units(allowed: [.seconds, .milliseconds], width: .abbreviated))); start it with: keylight serve --db \(databasePath) --master-key-file \(masterKeyFile)")
        }
    }
}
