import Foundation
import KeylightCore
import KeylightSigning
import Logging
import SQLKit

/// A named schema change. Migrations run in list order, each in its own transaction, and are
/// recorded in `keylight_migrations` so each runs once.
struct Migration: Sendable {
    let name: String
    /// The change, written with sql-kit's schema builders (raw SQL only where they cannot say
    /// it: see `SchemaBuilding.swift`), run inside the migration transaction.
    let apply: @Sendable (any SQLDatabase, StorageCapabilities) async throws -> Void
}

extension Migration {
    /// Every migration, oldest first. Append only: never edit or reorder a released one.
    static let all: [Migration] = [.initialSchema, .responseSigningKeys, .stripe, .webhooksAndCheckout, .dashboard, .tenantSigningKeys, .replacedLicenseKeys, .moneyPaths, .seatsAndOffline, .floatingAndUpdates, .mail, .idempotency, .sdkKeyOptional, .merchants, .appStore, .insights, .licenseLife, .paidChanges, .reminders, .portalAccounts, .reminderTemplates, .teamAccess, .releases, .releaseDelivery]
}

extension Database {
    /// Applies the migrations not yet recorded; returns the names applied.
    @discardableResult
    public func migrate(logger: Logger, clock: any WallClock = SystemWallClock()) async throws -> [String] {
        try await migrate(Migration.all, logger: logger, clock: clock)
    }

    /// All pending migrations in one transaction, under the driver's migration lock, so that
    /// processes starting together apply each migration exactly once.
    func migrate(_ migrations: [Migration], logger: Logger, clock: any WallClock = SystemWallClock()) async throws -> [String] {
        let capabilities = self.capabilities
        let now = clock.unixSeconds
        let applied = try await writeWithoutDeadlines { db in
            if let lock = capabilities.migrationLock { try await db.raw(SQLQueryString(lock)).run() }
            try await db.create(table: "keylight_migrations").ifNotExists()
                .column("name", type: .text, .key)
                .column("applied_at", type: .bigint, .notNull)
                .run()
            let known = Set(migrations.map(\.name))
            let recorded = try await db.raw("SELECT name FROM keylight_migrations").all(decodingColumn: "name", as: String.self)
            if let unknown = recorded.first(where: { !known.contains($0) }) {
                throw StorageError.unknownMigration(unknown, newestKnown: migrations.last?.name)
            }
            var applied: [String] = []
            for migration in migrations where !recorded.contains(migration.name) {
                try await migration.apply(db, capabilities)
                try await db.raw("INSERT INTO keylight_migrations (name, applied_at) VALUES (\(bind: migration.name), \(bind: now))").run()
                applied.append(migration.name)
            }
            return applied
        }
        for name in applied { logger.debug("applied migration", metadata: ["migration": "\(name)"]) }
        return applied
    }

    /// What `migrate` would do, read without writing: the migrations recorded, those this build
    /// would apply, and any recorded migration this build does not know (a newer release's: the
    /// build refuses to run on that database).
    public func migrationPlan() async throws -> MigrationPlan {
        let tables = try await sql.raw(SQLQueryString(capabilities.listTables)).all(decodingColumn: "name", as: String.self)
        let recorded = tables.contains("keylight_migrations") ? try await appliedMigrations() : []
        let known = Set(Migration.all.map(\.name))
        return MigrationPlan(
            applied: recorded,
            pending: Migration.all.filter { !recorded.contains($0.name) }.map { PendingMigration(name: $0.name, safety: $0.safety) },
            unknown: recorded.filter { !known.contains($0) }
        )
    }

    /// Names of the applied migrations, in the order applied.
    public func appliedMigrations() async throws -> [String] {
        try await sql.raw("SELECT name FROM keylight_migrations ORDER BY applied_at, name").all(decodingColumn: "name", as: String.self)
    }
}
