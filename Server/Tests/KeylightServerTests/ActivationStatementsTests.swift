import Crypto
import Foundation
import KeylightCore
@testable import KeylightServer
import NIOConcurrencyHelpers
import NIOCore
import SQLKit
import Testing

/// How many statements an activation sends: on PostgreSQL each is a round trip, so the
/// machine's instance and the webhook subscription are read with the license, and the slot and
/// the instance are written in one statement.
@Suite(.timeLimit(.minutes(6))) struct ActivationStatementsTests {
    typealias Conformance = StorageConformanceTests

    @Test(arguments: StorageBackend.available.filter { $0 != .sqliteFile })
    func anActivationSendsTheFewestStatementsItsDatabaseAllows(backend: StorageBackend) async throws {
        try await backend.with { opened in
            try await Conformance.catalog(opened, limit: 2)
            let log = StatementLog()
            let driver: DriverTraits = backend == .postgres ? .postgres : .sqlite
            let database = Database(sql: CountingSQLDatabase(base: opened.sql, log: log), driver: driver, close: {})
                .recordingWebhooks(sealer: SecretSealer(key: SymmetricKey(size: .bits256)))
            let (_, key) = try await Conformance.license(database)
            // BEGIN, the license (with the machine's instance and the subscription), the slot and
            // the instance, COMMIT. SQLite's WITH takes no UPDATE: the slot and the instance are two.
            let written = backend == .postgres ? 4 : 5
            log.clear()
            guard case .activated = try await Conformance.activate(database, key, machine: "m1") else { Issue.record("not activated"); return }
            #expect(log.statements.count == written, "\(log.statements)")
            #expect(log.statements.first?.hasPrefix("BEGIN") == true && log.statements.last == "COMMIT")

            // The same machine again: its instance came with the license (on PostgreSQL confirmed
            // active by one more statement: the read may predate a wait for the license's lock).
            log.clear()
            guard case .existing = try await Conformance.activate(database, key, machine: "m1") else { Issue.record("not existing"); return }
            #expect(log.statements.count == (backend == .postgres ? 4 : 3), "\(log.statements)")

            // A subscribed endpoint adds the delivery's INSERT, and nothing to find out that it subscribes.
            let endpoint = WebhookEndpoint(
                id: "we_1", tenantId: "acme", url: "https://hooks.example/in", sealedSecret: "x", events: ",instance.activated,",
                enabled: true, disabledReason: nil, createdAt: 1, updatedAt: 1
            )
            try await database.insertWebhookEndpoint(endpoint, actor: .system)
            log.clear()
            guard case .activated = try await Conformance.activate(database, key, machine: "m2") else { Issue.record("not activated"); return }
            #expect(log.statements.count == written + 1, "\(log.statements)")
            let deliveries = try await opened.sql.raw("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE event_type = 'instance.activated'")
                .first(decodingColumn: "n", as: Int.self)
            #expect(deliveries == 1)

            // The cap: a third machine on two seats takes no slot and leaves no instance behind,
            // though on PostgreSQL the INSERT is part of the statement whose UPDATE it refused.
            guard case .limitReached = try await Conformance.activate(database, key, machine: "m3") else { Issue.record("not refused"); return }
            let instances = try await opened.sql.raw("SELECT COUNT(*) AS n FROM instances").first(decodingColumn: "n", as: Int.self)
            let seats = try await opened.sql.raw("SELECT active_instances AS n FROM licenses").first(decodingColumn: "n", as: Int.self)
            #expect(instances == 2 && seats == 2)
        }
    }
}

extension ActivationStatementsTests {
    /// PostgreSQL: an activation that waits for the license's lock while the machine's instance is
    /// deactivated takes a new seat, not the instance that is gone (the license's statement saw
    /// the instances as they were before its wait).
    @Test func aMachineDeactivatedWhileTheActivationWaitedGetsANewSeat() async throws {
        guard StorageBackend.available.contains(.postgres) else { return }
        try await StorageBackend.postgres.with { database in
            try await Conformance.catalog(database, limit: 2)
            let (license, key) = try await Conformance.license(database)
            guard case .activated(let first, _) = try await Conformance.activate(database, key, machine: "m1") else { Issue.record("not activated"); return }
            let waiting = try await database.sql.withSession { session in
                try await session.raw("BEGIN").run()
                try await session.raw("SELECT id FROM licenses WHERE id = \(bind: license.id) FOR UPDATE").run()
                let activation = Task { try await Conformance.activate(database, key, machine: "m1") }
                // Until the activation is queued behind this lock.
                let deadline = ContinuousClock.now + .seconds(20)
                while ContinuousClock.now < deadline {
                    let blocked = try await session.raw("SELECT COUNT(*) AS n FROM pg_locks WHERE NOT granted").first(decodingColumn: "n", as: Int.self)
                    if (blocked ?? 0) > 0 { break }
                    try await Task.sleep(for: .milliseconds(10))
                }
                try await session.raw("UPDATE instances SET active = FALSE, deactivated_at = 1 WHERE id = \(bind: first)").run()
                try await session.raw("UPDATE licenses SET active_instances = active_instances - 1 WHERE id = \(bind: license.id)").run()
                try await session.raw("COMMIT").run()
                return activation
            }
            switch try await waiting.value {
            case .activated(let id, _): #expect(id != first)
            case let other: Issue.record("answered \(other) for a deactivated instance")
            }
            let active = try await database.sql.raw("SELECT COUNT(*) AS n FROM instances WHERE active").first(decodingColumn: "n", as: Int.self)
            let seats = try await database.sql.raw("SELECT active_instances AS n FROM licenses").first(decodingColumn: "n", as: Int.self)
            #expect(active == 1 && seats == 1)
        }
    }
}

/// The SQL of every statement run, in order.
final class StatementLog: Sendable {
    private let box = NIOLockedValueBox<[String]>([])
    var statements: [String] { box.withLockedValue { $0 } }
    func record(_ sql: String) { box.withLockedValue { $0.append(sql.trimmingCharacters(in: .whitespacesAndNewlines)) } }
    func clear() { box.withLockedValue { $0.removeAll() } }
}

/// A database that writes down each statement before running it on `base`, in sessions too.
struct CountingSQLDatabase: SQLDatabaseWrapper {
    let base: any SQLDatabase
    let log: StatementLog

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> ()) -> EventLoopFuture<Void> {
        log.record(base.serialize(query).sql)
        return base.execute(sql: query, onRow)
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> ()) async throws {
        log.record(base.serialize(query).sql)
        try await base.execute(sql: query, onRow)
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        let log = self.log
        return try await base.withSession { session in try await closure(CountingSQLDatabase(base: session, log: log)) }
    }
}
