import Foundation
import HTTPTypes
import KeylightCore
import KeylightTestSupport
@testable import KeylightServer
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import Testing

@Suite(.timeLimit(.minutes(6))) struct ReadinessTests {
    @Test func readyWhileTheDatabaseAnswersThenNotOnceDraining() async throws {
        try await Harness().run { client in
            let ready = try await client.request(.get, "/readyz")
            #expect(ready.status == .ok && ready["status"] as? String == "ready")
            client.server.readiness.startDraining()
            let draining = try await client.request(.get, "/readyz")
            #expect(draining.status == .serviceUnavailable)
            #expect(draining["reason"] as? String == "draining")
            #expect(draining.headers[.cacheControl] == "no-store")
            // Liveness is another question: the process still answers.
            #expect(try await client.request(.get, "/healthz").status == .ok)
        }
    }

    @Test func notReadyWhenTheDatabaseDoesNotAnswer() async throws {
        try await Harness().run { client in
            await client.database.close()
            let reply = try await client.request(.get, "/readyz")
            #expect(reply.status == .serviceUnavailable)
            #expect(reply["reason"] as? String == "database not answering")
        }
    }

    /// A database that hangs (a query stuck behind a lock, a dead connection) is "not ready"
    /// at the deadline, not whenever the query gives up.
    @Test func aDatabaseThatHangsIsNotReadyAtTheDeadline() async throws {
        let database = try await Database.sqlite(path: nil, logger: Harness.logger)
        let keyRing = KeyRing(database: database, sealer: .ephemeral(), clock: TestClock(), logger: Harness.logger)
        do {
            try await database.migrate(logger: Harness.logger)
            try await keyRing.loadCreatingIfNeeded()
        } catch {
            await database.close()
            throw error
        }
        // A ping that would answer after an hour: the answer comes at the deadline. The bound is
        // loose on purpose (a loaded CI machine schedules late), and far below the hour.
        let stuck = Readiness(ping: { try await Task.sleep(for: .seconds(3_600)) }, keyRing: keyRing, databaseTimeout: .milliseconds(200))
        let started = ContinuousClock.now
        #expect(await stuck.unreadiness() == "database not answering")
        #expect(ContinuousClock.now - started < .seconds(60))
        let answering = Readiness(database: database, keyRing: keyRing, databaseTimeout: .seconds(2))
        #expect(await answering.unreadiness() == nil)
        await database.close()
    }

    /// SIGTERM starts graceful shutdown: readiness must drop before any other service (the HTTP
    /// server among them) begins to stop, so a balancer stops sending while requests still finish.
    @Test func drainBeginsBeforeAnyOtherServiceStops() async throws {
        let database = try await Database.sqlite(path: nil, logger: Harness.logger)
        let readiness = Readiness(database: database, keyRing: KeyRing(database: database, sealer: .ephemeral(), clock: TestClock(), logger: Harness.logger))
        let seenAtStop = NIOLockedValueBox<Bool?>(nil)
        let probe = StopProbe { seenAtStop.withLockedValue { $0 = readiness.isDraining } }
        let group = ServiceGroup(configuration: .init(services: [
            .init(service: probe),
            .init(service: DrainSignal(readiness: readiness), successTerminationBehavior: .ignore),
        ], logger: Harness.logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            #expect(!readiness.isDraining)
            try await Task.sleep(for: .milliseconds(50))
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(seenAtStop.withLockedValue { $0 } == true)
        await database.close()
    }
}

/// A service that notes what it sees when it is told to stop.
private struct StopProbe: Service {
    let atStop: @Sendable () -> Void
    func run() async throws {
        try? await gracefulShutdown()
        atStop()
    }
}

@Suite(.timeLimit(.minutes(6))) struct BackupServiceTests {
    @Test func backsUpKeepsTheNewestAndCountsFailures() async throws {
        let directory = try temporaryDirectory()
        let harness = Harness(databasePath: directory.appendingPathComponent("live.sqlite").path)
        try await harness.run { client in
            let seed = try await client.seed()
            _ = try await client.activate(seed)
            let metrics = ServerMetrics()
            let folder = directory.appendingPathComponent("backups").path
            let service = BackupService(database: client.database, schedule: BackupSchedule(directory: folder, interval: .seconds(3_600), keep: 2),
                                        clock: client.clock, metrics: metrics, logger: Harness.logger)
            for _ in 0..<3 {
                #expect(await service.backUpOnce())
                client.clock.advance(by: 3_600)
            }
            try Data("an operator's note".utf8).write(to: URL(fileURLWithPath: folder).appendingPathComponent("README.txt"))
            #expect(await service.backUpOnce())
            let names = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
            #expect(names.count == 3 && names.contains("README.txt"), "\(names)")
            let kept = names.filter(BackupSchedule.isBackupName)
            #expect(kept.count == 2)
            #expect(kept.last == BackupSchedule.fileName(at: client.clock.unixSeconds))
            for name in kept {
                #expect(SecretFile.permissions(of: folder + "/" + name) == 0o600)
                let summary = try await Backups.verify(folder + "/" + name, logger: Harness.logger)
                #expect(summary.counts["instances"] == 1 && summary.counts["licenses"] == 1)
            }
            #expect(String(decoding: metrics.render(), as: UTF8.self).contains(#"keylight_backups_total{result="succeeded"} 4"#))

            // A folder that cannot be written: logged, counted, retried, never fatal.
            let blocked = directory.appendingPathComponent("blocked").path
            try Data("a file, not a folder".utf8).write(to: URL(fileURLWithPath: blocked))
            let failing = BackupService(database: client.database, schedule: BackupSchedule(directory: blocked, interval: .seconds(3_600), keep: 2),
                                        clock: client.clock, metrics: metrics, logger: Harness.logger)
            #expect(await failing.backUpOnce() == false)
            #expect(String(decoding: metrics.render(), as: UTF8.self).contains(#"keylight_backups_total{result="failed"} 1"#))
            // The server is still serving.
            #expect(try await client.validate(seed, instance: try #require(try await client.activate(seed, machine: "m2")["instance_id"] as? String)).status == .ok)
        }
    }

    @Test func backupNamesSortByTime() {
        let early = BackupSchedule.fileName(at: 1_700_000_000)
        let late = BackupSchedule.fileName(at: 1_700_003_600)
        #expect(early == "keylight-20231114T221320Z.sqlite")
        #expect(early < late && BackupSchedule.isBackupName(early))
        #expect(!BackupSchedule.isBackupName("keylight.sqlite"))
    }

    @Test func postgresIsNotBackedUpIntoAFile() async throws {
        var configuration = Harness().configuration
        configuration.backups = BackupSchedule(directory: "/tmp/x", interval: .seconds(60), keep: 1)
        guard let url = ProcessInfo.processInfo.environment["KEYLIGHT_TEST_POSTGRES_URL"] else {
            try PrerequisiteGate.missing("KEYLIGHT_TEST_POSTGRES_URL (a PostgreSQL server)")
            return
        }
        configuration.databaseURL = url
        configuration.masterKey = Base64.encode([UInt8](repeating: 5, count: 32))
        await #expect(throws: BackupError.self) { _ = try await buildApplication(configuration: configuration, logger: Harness.logger) }
    }
}
