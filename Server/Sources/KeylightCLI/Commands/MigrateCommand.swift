import ArgumentParser
import Foundation
import KeylightServer
import Logging

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply database migrations and exit.",
        discussion: """
        `keylight serve` migrates when it starts; this runs the same step on its own, before the new \
        release's processes start. With --dry-run nothing is written: it prints each pending migration \
        and whether processes of the previous release keep working beside it (a rolling upgrade), and \
        exits 3 when one needs them stopped first. A database migrated by a newer release is refused \
        (downgrades are not supported): exit 1 with the reason.
        """
    )

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Print the pending migrations and whether each is safe while older processes run; change nothing.")
    var dryRun = false

    func run() async throws {
        let logger = Logger(label: "keylight")
        if dryRun {
            try await printPlan(logger: logger)
            return
        }
        try await reportingInputFailuresAsync {
            let db = try await database.open(poolSize: 1, logger: logger)
            do {
                let applied = try await db.migrate(logger: logger)
                let all = try await db.appliedMigrations()
                await db.close()
                for name in applied { Standard.line("applied \(name)") }
                Standard.line("database is at \(all.last ?? "no migrations") (\(all.count) applied)")
            } catch {
                await db.close()
                throw error
            }
        }
    }

    private func printPlan(logger: Logger) async throws {
        let plan: MigrationPlan = try await reportingInputFailuresAsync {
            // A SQLite file that does not exist yet is not created by a dry run.
            if database.resolvedDatabaseURL == nil, !FileManager.default.fileExists(atPath: database.databasePath) {
                return MigrationPlan.forNewDatabase()
            }
            let db = try await database.open(poolSize: 1, logger: logger)
            do {
                let plan = try await db.migrationPlan()
                await db.close()
                return plan
            } catch {
                await db.close()
                throw error
            }
        }
        for line in plan.report { Standard.line(line) }
        if !plan.unknown.isEmpty { throw ExitCode(1) }
        if plan.needsOlderProcessesStopped { throw ExitCode(3) }
    }
}
