import Foundation
import KeylightCore
@testable import KeylightServer
import SQLKit
import Testing

/// The write-behind flush stores validation times and instances' telemetry a chunk of instances
/// per statement, not one statement per instance.
@Suite(.timeLimit(.minutes(6))) struct ActivityFlushStatementsTests {
    typealias Conformance = StorageConformanceTests

    /// More instances than one statement takes, each activated on `opened`; their ids, sorted.
    static func instances(_ opened: Database) async throws -> [String] {
        let count = Database.validationTimesPerStatement + 50
        try await Conformance.catalog(opened, limit: count)
        let (_, key) = try await Conformance.license(opened)
        for machine in 0..<count {
            guard case .activated = try await Conformance.activate(opened, key, machine: "m\(machine)") else {
                throw TestFailure("machine \(machine) not activated")
            }
        }
        let ids = try await opened.sql.raw("SELECT id FROM instances ORDER BY id").all(decodingColumn: "id", as: String.self)
        guard ids.count == count else { throw TestFailure("\(ids.count) instances") }
        return ids
    }

    static func counting(_ opened: Database, _ backend: StorageBackend, _ log: StatementLog) -> Database {
        Database(sql: CountingSQLDatabase(base: opened.sql, log: log), driver: backend == .postgres ? .postgres : .sqlite, close: {})
    }

    @Test(arguments: StorageBackend.available.filter { $0 != .sqliteFile })
    func validationTimesAreWrittenAChunkOfInstancesPerStatement(backend: StorageBackend) async throws {
        try await backend.with { opened in
            let ids = try await Self.instances(opened)
            let now = Conformance.now
            // Validated later already (another process's flush): this flush must not move it back.
            try await opened.touchInstances([ids[0]: now + 100])

            let log = StatementLog()
            var times = Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($1, now + Int64($0 % 7)) })
            times["no-such-instance"] = now
            try await Self.counting(opened, backend, log).touchInstances(times)

            let updates = log.statements.filter { $0.contains("last_validated_at") }
            #expect(updates.count == 2, "\(updates.count) statements for \(times.count) instances")
            let rows = try await opened.sql.raw("SELECT id, last_validated_at FROM instances").all()
            var stored: [String: Int64] = [:]
            for row in rows { stored[try row.decode(column: "id", as: String.self)] = try row.decode(column: "last_validated_at", as: Int64?.self) }
            for (index, id) in ids.enumerated() {
                #expect(stored[id] == (index == 0 ? now + 100 : now + Int64(index % 7)), "\(id)")
            }
        }
    }

    @Test(arguments: StorageBackend.available.filter { $0 != .sqliteFile })
    func instancesTelemetryIsWrittenAChunkOfInstancesPerStatement(backend: StorageBackend) async throws {
        try await backend.with { opened in
            let ids = try await Self.instances(opened)
            // What every instance sent before; the flush replaces all of it, clearing what is not sent now.
            try await opened.touchInstances([:], instanceTelemetry: Dictionary(uniqueKeysWithValues: ids.map {
                ($0, Telemetry(appVersion: "0.9", platform: "linux", memory: "8"))
            }))
            func sent(_ index: Int) -> Telemetry {
                index % 3 == 0 ? Telemetry() : Telemetry(appVersion: "1.\(index)", osVersion: index % 2 == 0 ? "14.1" : nil, arch: "arm64")
            }
            let log = StatementLog()
            var telemetry = Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($1, sent($0)) })
            telemetry["no-such-instance"] = Telemetry(appVersion: "2.0")
            try await Self.counting(opened, backend, log).touchInstances([:], instanceTelemetry: telemetry)

            let updates = log.statements.filter { $0.contains("UPDATE instances") }
            #expect(updates.count == 2, "\(updates.count) statements for \(telemetry.count) instances")
            let rows = try await opened.sql.raw("SELECT id, app_version, os_version, platform, arch, memory FROM instances").all()
            var stored: [String: [String?]] = [:]
            for row in rows {
                stored[try row.decode(column: "id", as: String.self)] = try ["app_version", "os_version", "platform", "arch", "memory"]
                    .map { try row.decode(column: $0, as: String?.self) }
            }
            for (index, id) in ids.enumerated() {
                let expected = sent(index)
                #expect(stored[id] == [expected.appVersion, expected.osVersion, expected.platform, expected.arch, expected.memory], "\(id)")
            }
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
