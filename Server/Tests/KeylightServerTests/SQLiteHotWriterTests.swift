import Crypto
import Foundation
import KeylightCore
@testable import KeylightServer
import SQLKit
import SQLiteKit
import NIOConcurrencyHelpers
import Testing

/// The hot write transactions of an SQLite file (issue 39): run as one job on a writer thread of
/// their own from kept statements, committed as the pool would commit them, and handed to the pool when another
/// connection holds SQLite's lock.
@Suite(.timeLimit(.minutes(6))) struct SQLiteHotWriterTests {
    typealias Conformance = StorageConformanceTests

    private func migrated(_ body: (Database, String) async throws -> Void) async throws {
        let path = try ConcurrencyTests.databaseFile()
        let database = try await Database.sqlite(path: path, logger: Harness.logger)
        do {
            _ = try await database.migrate(logger: Harness.logger)
            try await Conformance.catalog(database, limit: 2)
            try await body(database, path)
        } catch {
            await database.close()
            throw error
        }
        await database.close()
    }

    @Test func activationsRunOnTheKeptConnectionFromStatementsPreparedOnce() async throws {
        try await migrated { database, _ in
            let writer = try #require(database.hotWriter)
            var outcomes: [String] = []
            for _ in 0..<20 {
                let (_, key) = try await Conformance.license(database)
                for machine in ["a", "b", "c", "a"] {
                    switch try await Conformance.activate(database, key, machine: machine) {
                    case .activated: outcomes.append("activated")
                    case .existing: outcomes.append("existing")
                    case .limitReached: outcomes.append("limit")
                    default: outcomes.append("other")
                    }
                }
            }
            // Two seats: a and b take them, c is refused, a again is its own seat.
            #expect(outcomes == Array(repeating: ["activated", "activated", "limit", "existing"], count: 20).flatMap { $0 })
            #expect(writer.counts.committed == 80 && writer.counts.handedToPool == 0)
            // The same few statements, whatever they were bound to: prepared once each.
            let prepared = try #require(writer.preparations)
            #expect(prepared > 0 && prepared <= 12, "\(prepared) statements prepared for 80 activations")
            // Nor prepared again behind our back (a plan that looked at a bound value is).
            #expect(writer.repreparedStatements == [:])
            // What it committed is what the pool reads.
            let active = try await database.sql.raw("SELECT COUNT(*) AS n FROM instances WHERE active").first(decodingColumn: "n", as: Int.self)
            #expect(active == 40)
            let counters = try await database.sql.raw("SELECT SUM(active_instances) AS n FROM licenses").first(decodingColumn: "n", as: Int.self)
            #expect(counters == 40)
        }
    }

    @Test func webhookEventsAreRecordedFromKeptStatementsOnlyForSubscribers() async throws {
        try await migrated { plain, _ in
            let database = plain.recordingWebhooks(sealer: SecretSealer(key: SymmetricKey(size: .bits256)))
            let writer = try #require(database.hotWriter)
            // No endpoint yet: an activation records nothing.
            let (_, first) = try await Conformance.license(database)
            guard case .activated = try await Conformance.activate(database, first, machine: "m0") else { Issue.record("not activated"); return }
            let endpoint = WebhookEndpoint(
                id: "we_1", tenantId: "acme", url: "https://hooks.example/in", sealedSecret: "x", events: ",instance.activated,",
                enabled: true, disabledReason: nil, createdAt: 1, updatedAt: 1
            )
            try await database.insertWebhookEndpoint(endpoint, actor: .system)
            for index in 0..<30 {
                let (_, key) = try await Conformance.license(database)
                guard case .activated = try await Conformance.activate(database, key, machine: "m\(index)") else { Issue.record("not activated"); return }
            }
            let deliveries = try await database.sql.raw("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE event_type = 'instance.activated'")
                .first(decodingColumn: "n", as: Int.self)
            #expect(deliveries == 30)
            // The event type is never a bound LIKE pattern: SQLite would prepare that statement
            // again on every activation.
            #expect(writer.repreparedStatements == [:])
        }
    }

    @Test func aLockHeldElsewhereHandsTheTransactionToThePool() async throws {
        try await migrated { database, path in
            let writer = try #require(database.hotWriter)
            let (_, key) = try await Conformance.license(database)
            // Another connection (another process, as far as SQLite knows) holds the write lock.
            let other = try #require(SQLiteKeptConnection.openForWrites(path: path))
            try other.execute("BEGIN IMMEDIATE")
            let released = Task {
                try await Task.sleep(for: .milliseconds(300))
                try other.execute("COMMIT")
            }
            // The hot path meets SQLITE_BUSY at once and hands over; the pool waits out the lock.
            guard case .activated = try await Conformance.activate(database, key, machine: "m") else {
                Issue.record("not activated")
                return
            }
            try await released.value
            other.close()
            #expect(writer.counts.handedToPool == 1 && writer.counts.committed == 0)
            // Afterwards the kept connection takes the next one.
            guard case .activated = try await Conformance.activate(database, key, machine: "n") else {
                Issue.record("not activated")
                return
            }
            #expect(writer.counts.committed == 1)
        }
    }

    @Test func aFailingStatementRollsTheWholeTransactionBack() async throws {
        try await migrated { database, _ in
            let writer = try #require(database.hotWriter)
            await #expect(throws: SQLiteStatementError.self) {
                try await database.hotWrite { db in
                    try await db.raw("UPDATE key_types SET activation_limit = 99").run()
                    try await db.raw("INSERT INTO tenants (id, name, created_at) VALUES ('acme', 'again', 0)").run()
                }
            }
            let limit = try await database.sql.raw("SELECT activation_limit FROM key_types").first(decodingColumn: "activation_limit", as: Int.self)
            #expect(limit == 2)
            #expect(writer.counts.committed == 0 && writer.counts.handedToPool == 0)
            // A unique violation reads as one, as the pool's does (activation retries on it).
            do {
                try await database.hotWrite { db in
                    try await db.raw("INSERT INTO tenants (id, name, created_at) VALUES ('acme', 'again', 0)").run()
                }
                Issue.record("the duplicate tenant was inserted")
            } catch {
                #expect(StorageError.isUniqueViolation(error), "\(error)")
            }
        }
    }

    @Test func theTransactionRunsOnTheWriterThreadNotTheCallers() async throws {
        try await migrated { database, _ in
            let writer = try #require(database.hotWriter)
            let seen = try await database.hotWrite { db in
                try await db.raw("UPDATE key_types SET activation_limit = 3").run()
                let during = writer.isWriterThread
                try await db.raw("UPDATE key_types SET activation_limit = 4").run()
                return [during, writer.isWriterThread]
            }
            // Both statements, and everything between them, on the one writer thread.
            #expect(seen == [true, true])
            #expect(!writer.isWriterThread)
            #expect(writer.counts.committed == 1)
        }
    }

    /// Holds the writer thread busy until `count` jobs are queued behind it, then lets them run.
    private func lineUp<T: Sendable>(
        _ writer: SQLiteHotWriter, count: Int, _ jobs: [@Sendable () async throws -> T]
    ) async throws -> [Result<T, any Error>] {
        // The writer thread waits on a semaphore (it is its own thread); this task only polls.
        let (started, release) = (LockedFlags(), DispatchSemaphore(value: 0))
        let blocker = Task { await writer.thread.run { started.append(true); release.wait() } }
        let deadline = ContinuousClock.now + .seconds(20)
        while started.values.isEmpty && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        let tasks = jobs.map { job in Task { () -> Result<T, any Error> in
            do { return .success(try await job()) } catch { return .failure(error) }
        } }
        while writer.thread.queuedJobs < count && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        let queued = writer.thread.queuedJobs
        release.signal()
        await blocker.value
        #expect(queued == count, "\(queued) of \(count) transactions queued")
        var results: [Result<T, any Error>] = []
        for task in tasks { results.append(await task.value) }
        return results
    }

    @Test func transactionsQueuedTogetherCommitOnceAndAnswerOnlyAfterTheCommit() async throws {
        try await migrated { database, _ in
            let writer = try #require(database.hotWriter)
            var keys: [LicenseKey] = []
            for _ in 0..<20 { keys.append(try await Conformance.license(database).1) }
            let results = try await lineUp(writer, count: 20, keys.map { key in { @Sendable () async throws -> Bool in
                guard case .activated = try await Conformance.activate(database, key, machine: "m") else { return false }
                // Answered, so committed: another connection (the pool's) already sees it.
                let seen = try await database.sql.raw("SELECT active_instances AS n FROM licenses WHERE key_hash = \(bind: key.keyHash)")
                    .first(decodingColumn: "n", as: Int.self)
                return seen == 1
            } })
            #expect(results.map { (try? $0.get()) ?? false } == Array(repeating: true, count: 20))
            // Twenty transactions, one COMMIT.
            #expect(writer.counts.committed == 20 && writer.counts.handedToPool == 0)
            #expect(writer.commits == 1)
            // Alone, a transaction commits at once.
            let (_, alone) = try await Conformance.license(database)
            guard case .activated = try await Conformance.activate(database, alone, machine: "m") else { Issue.record("not activated"); return }
            #expect(writer.commits == 2 && writer.counts.committed == 21)
        }
    }

    @Test func aFailingMemberOfAGroupIsUndoneAloneAndTheOthersCommit() async throws {
        try await migrated { database, _ in
            let writer = try #require(database.hotWriter)
            let jobs: [@Sendable () async throws -> String] = (0..<12).map { index in {
                try await database.hotWrite { db in
                    try await db.raw("INSERT INTO tenants (id, name, created_at) VALUES (\(bind: "t\(index)"), 'x', 0)").run()
                    // The sixth also inserts a tenant that exists: its own insert must be undone with it.
                    if index == 5 { try await db.raw("INSERT INTO tenants (id, name, created_at) VALUES ('acme', 'again', 0)").run() }
                    return "t\(index)"
                }
            } }
            let results = try await lineUp(writer, count: 12, jobs)
            for (index, result) in results.enumerated() {
                switch result {
                case .success(let id): #expect(index != 5 && id == "t\(index)")
                case .failure(let error): #expect(index == 5 && StorageError.isUniqueViolation(error), "\(index): \(error)")
                }
            }
            let ids = try await database.sql.raw("SELECT id FROM tenants WHERE id LIKE 't%' ORDER BY CAST(SUBSTR(id, 2) AS INTEGER)")
                .all(decodingColumn: "id", as: String.self)
            #expect(ids == (0..<12).filter { $0 != 5 }.map { "t\($0)" })
            #expect(writer.counts.committed == 11 && writer.commits == 1)
        }
    }

    @Test func aMemberWhoseFailureRollsTheWholeGroupBackHasTheOthersRunAgain() async throws {
        try await migrated { database, _ in
            let writer = try #require(database.hotWriter)
            struct Gone: Error {}
            let jobs: [@Sendable () async throws -> String] = (0..<12).map { index in {
                try await database.hotWrite { db in
                    try await db.raw("INSERT INTO tenants (id, name, created_at) VALUES (\(bind: "t\(index)"), 'x', 0)").run()
                    // As SQLite does on a full disk or an I/O error: the whole transaction is gone,
                    // the earlier members' work with it.
                    if index == 5 {
                        try await db.raw("ROLLBACK").run()
                        throw Gone()
                    }
                    return "t\(index)"
                }
            } }
            let results = try await lineUp(writer, count: 12, jobs)
            for (index, result) in results.enumerated() {
                switch result {
                case .success(let id): #expect(index != 5 && id == "t\(index)")
                case .failure(let error): #expect(index == 5 && error is Gone, "\(index): \(error)")
                }
            }
            // The five before it were run again on the pool; the six after it in a group of their own.
            let ids = try await database.sql.raw("SELECT id FROM tenants WHERE id LIKE 't%' ORDER BY CAST(SUBSTR(id, 2) AS INTEGER)")
                .all(decodingColumn: "id", as: String.self)
            #expect(ids == (0..<12).filter { $0 != 5 }.map { "t\($0)" })
            // Each of the eleven committed once, in a group or on the pool (how the groups formed
            // depends on the load).
            let counts = writer.counts
            #expect(counts.committed + counts.handedToPool == 11, "\(counts)")
        }
    }

    @Test func aFailedGroupCommitFailsEveryMemberAndLeavesNothing() async throws {
        try await migrated { database, _ in
            let writer = try #require(database.hotWriter)
            // A deferred foreign key is checked at COMMIT: one member's orphan fails the group's.
            try await database.sql.raw("""
                CREATE TABLE orphans (id TEXT PRIMARY KEY, tenant_id TEXT REFERENCES tenants(id) DEFERRABLE INITIALLY DEFERRED)
                """).run()
            let jobs: [@Sendable () async throws -> String] = (0..<12).map { index in {
                try await database.hotWrite { db in
                    try await db.raw("INSERT INTO tenants (id, name, created_at) VALUES (\(bind: "t\(index)"), 'x', 0)").run()
                    if index == 5 { try await db.raw("INSERT INTO orphans (id, tenant_id) VALUES ('o', 'nobody')").run() }
                    return "t\(index)"
                }
            } }
            let results = try await lineUp(writer, count: 12, jobs)
            // No member answers success for work that was not committed.
            for (index, result) in results.enumerated() {
                if case .success = result { Issue.record("member \(index) answered success") }
            }
            let left = try await database.sql.raw("SELECT COUNT(*) AS n FROM tenants WHERE id LIKE 't%'").first(decodingColumn: "n", as: Int.self)
            let orphans = try await database.sql.raw("SELECT COUNT(*) AS n FROM orphans").first(decodingColumn: "n", as: Int.self)
            #expect(left == 0 && orphans == 0)
            #expect(writer.counts.committed == 0 && writer.commits == 0)
            // The writer goes on: the next transaction commits.
            let (_, key) = try await Conformance.license(database)
            guard case .activated = try await Conformance.activate(database, key, machine: "m") else { Issue.record("not activated"); return }
            #expect(writer.counts.committed == 1)
        }
    }

    @Test func theWriterThreadRunsEveryJobIncludingOnesAfterItWasStopped() async throws {
        let executor = WriterThreadExecutor(name: "test-writer")
        let seen = LockedFlags()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask { await executor.run { seen.append(executor.isCurrentThread) } }
            }
        }
        #expect(seen.values == Array(repeating: true, count: 50))
        executor.stop()
        // A job after stop() still runs (on a thread that ends once it has).
        #expect(await executor.run { executor.isCurrentThread })
    }
}

/// Flags appended from whichever thread ran them.
private final class LockedFlags: Sendable {
    private let box = NIOLockedValueBox<[Bool]>([])
    func append(_ value: Bool) { box.withLockedValue { $0.append(value) } }
    var values: [Bool] { box.withLockedValue { $0 } }
}
