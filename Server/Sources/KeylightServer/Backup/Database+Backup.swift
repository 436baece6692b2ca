import Foundation
import SQLKit

extension Database {
    /// Answers when the database answers (`SELECT 1`).
    func ping() async throws {
        try await sql.raw("SELECT 1").run()
    }

    /// Writes a transactionally consistent copy of this SQLite database to `path` with
    /// `VACUUM INTO` (a read transaction: writers go on meanwhile), never a file copy, which
    /// could tear a page being written. PostgreSQL is backed up with pg_dump instead.
    func vacuum(into path: String) async throws {
        guard capabilities.backsUpIntoFile else { throw BackupError.notSQLite }
        try await sql.raw("VACUUM INTO \(bind: path)").run()
    }

    /// What `keylight backup --verify` reports of a database: SQLite's integrity check, the
    /// schema (applied migrations) and the catalogue's counts.
    func backupSummary() async throws -> BackupSummary {
        let integrity = try await sql.raw("PRAGMA integrity_check").all().compactMap { try? $0.decode(column: "integrity_check", as: String.self) }
        let migrations = try await appliedMigrations()
        var counts: [String: Int] = [:]
        for table in BackupSummary.countedTables {
            let row = try await sql.raw("SELECT COUNT(*) AS n FROM \(ident: table)").first()
            counts[table] = try row?.decode(column: "n", as: Int.self) ?? 0
        }
        return BackupSummary(integrity: integrity.joined(separator: "; "), migrations: migrations, counts: counts)
    }
}

/// A database's integrity, schema version and catalogue counts.
public struct BackupSummary: Sendable, Equatable {
    /// `ok`, or SQLite's list of problems.
    public var integrity: String
    public var migrations: [String]
    public var counts: [String: Int]

    static let countedTables = ["tenants", "products", "key_types", "licenses", "instances", "tenant_signing_keys", "webhook_endpoints", "audit_log"]

    public var isIntact: Bool { integrity == "ok" }
    /// The newest migration this build knows that the database lacks, or one it has that this
    /// build does not know (a backup from a newer build).
    public var schemaProblem: String? {
        let known = Migration.all.map(\.name)
        if let unknown = migrations.first(where: { !known.contains($0) }) { return "made by a newer build (migration \(unknown))" }
        if migrations.isEmpty { return "no Keylight schema" }
        return nil
    }

    /// One line of JSON.
    public var json: String {
        let countText = counts.keys.sorted().map { "\"\($0)\":\(counts[$0] ?? 0)" }.joined(separator: ",")
        let integrityText = integrity.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return #"{"integrity":"\#(integrityText)","schema":"\#(migrations.last ?? "")","migrations":\#(migrations.count),"counts":{\#(countText)}}"#
    }
}

/// Why a backup or restore did not happen.
public struct BackupError: Error, Equatable, Sendable, CustomStringConvertible {
    public let description: String
    static let notSQLite = Self(description: "online backup is for the embedded SQLite database; back PostgreSQL up with pg_dump (see docs/operating/backups.md)")
    static func exists(_ path: String) -> Self { Self(description: "\(path) already exists (pass --force to replace it)") }
    static func missing(_ path: String) -> Self { Self(description: "\(path): no such database") }
    static func corrupt(_ path: String, _ reason: String) -> Self { Self(description: "\(path) is not a usable backup: \(reason)") }
    static func wrongMasterKey(_ path: String) -> Self {
        Self(description: "the master key does not open the backup's sealed keys (\(path)); give the master key the backed-up server used (--master-key-file)")
    }
}
