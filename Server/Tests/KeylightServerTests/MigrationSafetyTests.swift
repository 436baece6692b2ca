import Foundation
@testable import KeylightServer
import SQLKit
import Testing

/// Issue 52: migrations are expand-then-contract. Each migration says whether processes of the
/// previous release keep working beside it; one marked `.expand` is applied here and must only
/// have added to the schema: no table or column gone, no type changed, no column made NOT NULL,
/// and no new NOT NULL column without a default on a table older code inserts into.
@Suite(.timeLimit(.minutes(6))) struct MigrationSafetyTests {
    struct Column: Hashable, CustomStringConvertible {
        var table: String, name: String, type: String, nullable: Bool, hasDefault: Bool
        var description: String { "\(table).\(name) \(type)\(nullable ? "" : " NOT NULL")\(hasDefault ? " DEFAULT" : "")" }
    }

    static func schema(_ db: Database, backend: StorageBackend) async throws -> [String: [String: Column]] {
        var tables: [String: [String: Column]] = [:]
        if backend == .postgres {
            // pg_catalog, not information_schema: the latter walks every schema of the database
            // (hundreds while the suite runs) with privilege checks, seconds a query.
            let rows = try await db.sql.raw("""
                SELECT CAST(c.relname AS TEXT) AS t, CAST(a.attname AS TEXT) AS c, format_type(a.atttypid, a.atttypmod) AS ty,
                       CASE WHEN a.attnotnull THEN 'NO' ELSE 'YES' END AS n, CASE WHEN a.atthasdef THEN 'x' ELSE NULL END AS d
                FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace s ON s.oid = c.relnamespace
                WHERE s.nspname = current_schema() AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
                """).all()
            for row in rows {
                let column = Column(table: try row.decode(column: "t", as: String.self), name: try row.decode(column: "c", as: String.self),
                                    type: try row.decode(column: "ty", as: String.self), nullable: try row.decode(column: "n", as: String.self) == "YES",
                                    hasDefault: !(try row.decodeNil(column: "d")))
                tables[column.table, default: [:]][column.name] = column
            }
            return tables
        }
        let names = try await db.sql.raw(SQLQueryString(db.capabilities.listTables)).all(decodingColumn: "name", as: String.self)
        for table in names where !table.hasPrefix("sqlite_") {
            for row in try await db.sql.raw("SELECT name, type, \"notnull\" AS nn, dflt_value, pk FROM pragma_table_info(\(bind: table))").all() {
                let isKey = try row.decode(column: "pk", as: Int.self) > 0
                let column = Column(table: table, name: try row.decode(column: "name", as: String.self), type: try row.decode(column: "type", as: String.self).uppercased(),
                                    nullable: try row.decode(column: "nn", as: Int.self) == 0 && !isKey, hasDefault: !(try row.decodeNil(column: "dflt_value")))
                tables[table, default: [:]][column.name] = column
            }
        }
        return tables
    }

    @Test func everyMigrationSaysWhatOlderProcessesDo() {
        #expect(Set(Migration.safety.keys) == Set(Migration.all.map(\.name)))
        // Since release 63ae57f (through 0016) every migration adds only; their caveats name what
        // older processes ignore. 0008 rebuilt a table, long before: the test below found it.
        let since = Migration.all.drop { $0.name != Migration.licenseLife.name }
        #expect(!since.isEmpty && since.allSatisfy { $0.safety.isSafeBesideOlderProcesses })
        #expect(Migration.all.filter { !$0.safety.isSafeBesideOlderProcesses }.map(\.name) == ["0008_money_paths"])
        #expect(MigrationSafety.contract(reason: "drops licenses.note").isSafeBesideOlderProcesses == false)
    }

    @Test(arguments: StorageBackend.available) func expandMigrationsOnlyAdd(backend: StorageBackend) async throws {
        let db = try await backend.open(migrations: [])
        do {
            var before = try await Self.schema(db, backend: backend)
            for (index, migration) in Migration.all.enumerated() {
                _ = try await db.migrate(Array(Migration.all.prefix(index + 1)), logger: Harness.logger)
                let after = try await Self.schema(db, backend: backend)
                guard migration.safety.isSafeBesideOlderProcesses else { before = after; continue }
                for (table, columns) in before where table != "keylight_migrations" {
                    let now = after[table] ?? [:]
                    #expect(!now.isEmpty, "\(migration.name) dropped or renamed table \(table)")
                    for (name, old) in columns {
                        guard let new = now[name] else {
                            Issue.record("\(migration.name) dropped or renamed \(old)")
                            continue
                        }
                        #expect(new.type == old.type, "\(migration.name) changed \(old) to \(new)")
                        #expect(new.nullable || !old.nullable, "\(migration.name) made \(old) NOT NULL")
                    }
                    for (name, new) in now where columns[name] == nil {
                        #expect(new.nullable || new.hasDefault, "\(migration.name) added \(new) to \(table) without a default: older processes' inserts would fail")
                    }
                }
                before = after
            }
        } catch {
            await db.close()
            throw error
        }
        await db.close()
    }

    /// `keylight migrate --dry-run`'s plan: the pending migrations of a database left at release
    /// 63ae57f's last one, all safe; none after migrating; a newer release's migration refused.
    @Test(arguments: StorageBackend.available) func thePlanAndTheRefusedDowngrade(backend: StorageBackend) async throws {
        let old = Array(Migration.all.prefix { $0.name != Migration.licenseLife.name })
        let db = try await backend.open(migrations: old)
        do {
            let plan = try await db.migrationPlan()
            #expect(plan.applied == old.map(\.name) && plan.unknown.isEmpty)
            #expect(plan.pending.map(\.name) == Migration.all.dropFirst(old.count).map(\.name))
            #expect(plan.isSafeBesideOlderProcesses && plan.pending.first { $0.name == "0022_team_access" }?.note?.contains("full access") == true)
            try await db.migrate(logger: Harness.logger)
            #expect(try await db.migrationPlan().pending.isEmpty)
            try await db.sql.raw("INSERT INTO keylight_migrations (name, applied_at) VALUES ('9999_from_a_newer_release', 1)").run()
            #expect(try await db.migrationPlan().unknown == ["9999_from_a_newer_release"])
            let refusal = await #expect(throws: StorageError.self) { try await db.migrate(logger: Harness.logger) }
            #expect(refusal?.description.contains("Downgrades are refused") == true, "\(String(describing: refusal))")
            #expect(refusal?.description.contains("knows migrations up to \(Migration.all.last!.name)") == true)
        } catch {
            await db.close()
            throw error
        }
        await db.close()
    }

    /// A new database has no older processes, but the plan still lists 0008 as a contract: the
    /// dry run says what each migration is, and `migrate` on an empty database is always fine.
    @Test func aNewDatabasesPlanIsEveryMigration() {
        let plan = MigrationPlan.forNewDatabase()
        #expect(plan.applied.isEmpty && plan.pending.map(\.name) == Migration.all.map(\.name))
        #expect(plan.pending.filter { !$0.isSafeBesideOlderProcesses }.map(\.name) == ["0008_money_paths"])
    }
}
