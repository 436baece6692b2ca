import Foundation
import KeylightCore
import Logging

/// Online backups of the embedded SQLite database, their checks, and restores into a new
/// database. A backup holds every license and the sealed signing keys, never the master key
/// that opens them: that is kept apart on purpose (see docs/operating/backups.md).
public enum Backups {
    /// Copies `database` (open, possibly serving) consistently into `destination`, mode 0600,
    /// written beside it under another name and renamed into place, so a reader never sees half
    /// a file. Refuses an existing `destination` unless `replacing`.
    public static func write(_ database: Database, to destination: String, replacing: Bool = false) async throws {
        let target = URL(fileURLWithPath: destination).standardizedFileURL
        if !replacing, FileManager.default.fileExists(atPath: target.path) { throw BackupError.exists(target.path) }
        try await staged(beside: target) { staging in
            try await database.vacuum(into: staging.path)
            try ownerOnly(staging.path)
            try moveIntoPlace(staging, target)
        }
    }

    /// Backs up the database file at `databasePath` (which a server may be serving) into
    /// `destination`, and reports what the copy holds.
    public static func backup(databasePath: String, to destination: String, replacing: Bool = false, logger: Logger) async throws -> BackupSummary {
        guard FileManager.default.fileExists(atPath: databasePath) else { throw BackupError.missing(databasePath) }
        let database = try await Database.sqlite(path: databasePath, poolSize: 1, logger: logger)
        do {
            try await write(database, to: destination, replacing: replacing)
            await database.close()
        } catch {
            await database.close()
            throw error
        }
        return try await verify(destination, logger: logger)
    }

    /// Checks a backup without changing it: SQLite's integrity check, the schema, the counts.
    /// Read from a private copy (opening the file itself could leave journal files beside it).
    public static func verify(_ path: String, masterKey: SecretSealer? = nil, logger: Logger) async throws -> BackupSummary {
        guard FileManager.default.fileExists(atPath: path) else { throw BackupError.missing(path) }
        let scratch = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("keylight-verify-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: scratch) }
        let copy = scratch.appendingPathComponent("backup.sqlite")
        try FileManager.default.copyItem(atPath: path, toPath: copy.path)
        return try await inspect(copy.path, named: path, masterKey: masterKey, logger: logger)
    }

    /// Restores `backupPath` into a new database at `databasePath`: checked whole first (integrity,
    /// schema, and that `masterKeyPath`'s key opens every sealed signing key), then moved into place
    /// in one rename. Writes nothing when any check fails; refuses an existing database unless
    /// `replacing` (its write-ahead log is removed with it, or SQLite would replay it onto the backup).
    public static func restore(from backupPath: String, to databasePath: String, masterKeyPath: String, replacing: Bool = false, logger: Logger) async throws -> BackupSummary {
        let target = URL(fileURLWithPath: databasePath).standardizedFileURL
        let companions = ["-wal", "-shm", "-journal"].map { target.path + $0 }
        if !replacing, ([target.path] + companions).contains(where: FileManager.default.fileExists(atPath:)) {
            throw BackupError.exists(target.path)
        }
        guard FileManager.default.fileExists(atPath: backupPath) else { throw BackupError.missing(backupPath) }
        guard FileManager.default.fileExists(atPath: masterKeyPath) else {
            throw BackupError(description: "\(masterKeyPath): no master key there (restore never makes one: a new key would open nothing)")
        }
        let sealer = try SecretSealer.load(environmentValue: nil, path: masterKeyPath)
        return try await staged(beside: target) { staging in
            try FileManager.default.copyItem(atPath: backupPath, toPath: staging.path)
            try ownerOnly(staging.path)
            let summary = try await inspect(staging.path, named: backupPath, masterKey: sealer, logger: logger)
            // Only the staged file's own journal files may remain from the check; none may follow it.
            for suffix in ["-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: staging.path + suffix) }
            for path in companions { try? FileManager.default.removeItem(atPath: path) }
            try moveIntoPlace(staging, target)
            return summary
        }
    }

    /// Opens a private copy and checks it; with `masterKey`, also that it opens every sealed signing key.
    static func inspect(_ copy: String, named name: String, masterKey: SecretSealer?, logger: Logger) async throws -> BackupSummary {
        let database: Database
        do {
            database = try await Database.sqlite(path: copy, poolSize: 1, logger: logger)
        } catch {
            throw BackupError.corrupt(name, "\(error)")
        }
        do {
            let summary: BackupSummary
            do {
                summary = try await database.backupSummary()
            } catch {
                throw BackupError.corrupt(name, "\(error)")
            }
            guard summary.isIntact else { throw BackupError.corrupt(name, "integrity check: \(summary.integrity)") }
            if let problem = summary.schemaProblem { throw BackupError.corrupt(name, problem) }
            if let masterKey {
                for row in try await database.signingKeyRows() {
                    guard (try? masterKey.open(row.sealedPrivateKey, context: KeyRing.sealContext(row.kid))) != nil else {
                        throw BackupError.wrongMasterKey(name)
                    }
                }
            }
            await database.close()
            return summary
        } catch {
            await database.close()
            throw error
        }
    }

    /// Mode 0600: a backup holds customers' addresses and the sealed keys.
    private static func ownerOnly(_ path: String) throws {
        guard chmod(path, 0o600) == 0 else {
            throw BackupError(description: "\(path): cannot set mode 0600 (\(String(cString: strerror(errno))))")
        }
    }

    /// Runs `body` with a path in a private (0700) folder beside `target`, removed afterwards.
    private static func staged<T>(beside target: URL, _ body: (URL) async throws -> T) async throws -> T {
        let folder = target.deletingLastPathComponent().appendingPathComponent(".\(target.lastPathComponent).staging-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: folder) }
        return try await body(folder.appendingPathComponent(target.lastPathComponent))
    }

    /// Flushes `staging` to disk and renames it over `target` (one atomic step on one file system).
    private static func moveIntoPlace(_ staging: URL, _ target: URL) throws {
        let handle = try FileHandle(forUpdating: staging)
        try handle.synchronize()
        try handle.close()
        guard rename(staging.path, target.path) == 0 else {
            throw BackupError(description: "\(target.path): cannot be written (\(String(cString: strerror(errno))))")
        }
    }
}
