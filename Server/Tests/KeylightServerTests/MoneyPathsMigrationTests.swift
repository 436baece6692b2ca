import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Testing

/// Migration 0008 on a database that already received Stripe events.
@Suite(.timeLimit(.minutes(6))) struct MoneyPathsMigrationTests {
    @Test(arguments: StorageBackend.available)
    func eventsReceivedBeforeTheUpgradeStayDuplicatesOfTheirTenant(backend: StorageBackend) async throws {
        let before = Array(Migration.all.prefix { $0.name != Migration.moneyPaths.name })
        let db = try await backend.open(migrations: before)
        try await db.sql.raw("""
            INSERT INTO stripe_events (id, tenant_id, type, outcome, received_at) VALUES ('evt_old', 'acme', 'checkout.session.completed', 'minted', 5)
            """).run()
        #expect(try await db.migrate(logger: Harness.logger) == Migration.all.dropFirst(before.count).map(\.name))
        let row = try #require(try await db.sql.raw("SELECT tenant_id, outcome, attempts, received_at FROM stripe_events WHERE id = 'evt_old'").first())
        #expect(try row.decode(column: "tenant_id", as: String.self) == "acme" && row.decode(column: "outcome", as: String.self) == "minted")
        #expect(try row.decode(column: "attempts", as: Int.self) == 1 && row.decode(column: "received_at", as: Int64.self) == 5)
        // The same id for another tenant is now a different event.
        try await db.sql.raw("""
            INSERT INTO stripe_events (tenant_id, id, type, outcome, attempts, received_at, updated_at) VALUES ('beta', 'evt_old', 't', 'minted', 1, 6, 6)
            """).run()
        #expect(try await db.sql.raw("SELECT COUNT(*) AS n FROM stripe_events WHERE id = 'evt_old'").first(decodingColumn: "n", as: Int.self) == 2)
        await db.close()
    }

    /// A tenant, product and 3-seat key type written as the schema before 0009 had them.
    static func insertCatalogue(_ db: Database) async throws {
        try await db.sql.raw("INSERT INTO tenants (id, name, created_at) VALUES ('acme', 'Acme', 1)").run()
        try await db.sql.raw("""
            INSERT INTO products (tenant_id, id, name, key_prefix, sdk_key_hash, trial_duration_days, free_tier_enabled, created_at, updated_at)
            VALUES ('acme', 'app', 'App', 'ACME', 'h', 14, \(bind: false), 1, 1)
            """).run()
        try await db.sql.raw("""
            INSERT INTO key_types (tenant_id, product_id, id, display_name, activation_limit, duration_days, fallback_access, lease_ttl_seconds, entitlements, created_at)
            VALUES ('acme', 'app', 'pro', 'Pro', 3, NULL, \(bind: false), 604800, 'pro', 1)
            """).run()
    }

    /// Migration 0009 on a database with products, key types and instances: the new columns take
    /// their defaults (portal open, 365-day offline leases, no device key), and nothing else moves.
    @Test(arguments: StorageBackend.available)
    func existingCatalogueGetsThePortalOpenAndYearLongOfflineLeases(backend: StorageBackend) async throws {
        let before = Array(Migration.all.prefix { $0.name != Migration.seatsAndOffline.name })
        let db = try await backend.open(migrations: before)
        try await Self.insertCatalogue(db)
        #expect(try await db.migrate(logger: Harness.logger) == Migration.all.dropFirst(before.count).map(\.name))
        #expect(try await db.product(tenantId: "acme", id: "app")?.portalEnabled == true)
        #expect(try await db.keyType(tenantId: "acme", productId: "app", id: "pro")?.offlineLeaseDays == 365)
        #expect(try await db.product(tenantId: "acme", id: "app")?.trialDurationDays == 14)
        await db.close()
    }

    /// Migration 0010 on a catalogue with a license in use: its key type neither floats nor allows
    /// overage nor bounds updates, the license carries no updates date, its seat has no deadline,
    /// and the sweep never frees it, however late it runs.
    @Test(arguments: StorageBackend.available)
    func existingSeatsStayNodeLockedAndCoverEveryBuild(backend: StorageBackend) async throws {
        let before = Array(Migration.all.prefix { $0.name != Migration.floatingAndUpdates.name })
        let db = try await backend.open(migrations: before)
        do {
            try await Self.checkMigration0010(db)
        } catch {
            await db.close()
            throw error
        }
        await db.close()
    }

    static func checkMigration0010(_ db: Database) async throws {
        let key = try LicenseKey.generate(prefix: "ACME")
        try await Self.insertCatalogue(db)
        try await db.sql.raw("""
            INSERT INTO licenses (id, tenant_id, product_id, key_type_id, key_hash, masked_key, status, expires_at, customer_email, active_instances, created_at, updated_at)
            VALUES ('lic', 'acme', 'app', 'pro', \(bind: key.keyHash), 'ACME-****', 'active', NULL, NULL, 1, 1, 1)
            """).run()
        try await db.sql.raw("""
            INSERT INTO instances (id, license_id, name, machine_hash, active, activated_at, last_validated_at, deactivated_at)
            VALUES ('inst', 'lic', 'Mac', 'm', \(bind: true), 1, 1, NULL)
            """).run()
        // 0010 and every migration after it.
        #expect(try await db.migrate(logger: Harness.logger) == Migration.all.drop { $0.name != Migration.floatingAndUpdates.name }.map(\.name))
        // 0011: a license minted before keys were sealed has none (its key cannot be mailed, only reminted).
        #expect(try await db.sealedKey(licenseId: "lic") == nil)
        #expect(try await db.mails(licenseId: "lic").isEmpty)
        let keyType = try #require(try await db.keyType(tenantId: "acme", productId: "app", id: "pro"))
        #expect(!keyType.floating && keyType.heartbeatSeconds == 600 && keyType.overagePercent == 0 && keyType.updatesDays == nil)
        #expect(try await db.license(keyHash: key.keyHash)?.updatesUntil == nil)
        let grant = try #require(try await db.grant(keyHash: key.keyHash, tenantId: "acme", productId: "app", instanceId: "inst"))
        #expect(grant.entitlementCodes == ["pro"] && !grant.floating && grant.seatCap == 3 && grant.onlineLeaseTTL == 604_800)
        #expect(try await db.expireFloatingSeats(now: 1 << 40) == 0)
        let instance = try #require(try await db.instances(licenseId: "lic").first)
        #expect(instance.active && instance.seatExpiresAt == nil)
    }
}
