import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Testing

/// Migration 0008 on a database that already received Stripe events.
@Suite(.timeLimit(.minutes(3))) struct MoneyPathsMigrationTests {
    @Test(arguments: StorageBackend.available)
    func eventsReceivedBeforeTheUpgradeStayDuplicatesOfTheirTenant(backend: StorageBackend) async throws {
        let before = Array(Migration.all.prefix { $0.name != Migration.moneyPaths.name })
        let db = try await backend.open(migrations: before)
        try await db.sql.raw("""
            INSERT INTO stripe_events (id, tenant_id, type, outcome, received_at) VALUES ('evt_old', 'acme', 'checkout.session.completed', 'minted', 5)
            """).run()
        #expect(try await db.migrate(logger: Harness.logger) == [Migration.moneyPaths.name])
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
}
