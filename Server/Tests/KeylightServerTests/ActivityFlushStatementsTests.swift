import Foundation
import KeylightCore
@testable import KeylightServer
import SQLKit
import Testing

/// The write-behind flush stores validation times a chunk of instances per statement, not one
/// statement per instance.
@Suite(.timeLimit(.minutes(3))) struct ActivityFlushStatementsTests {
    typealias Conformance = StorageConformanceTests

    @Test(arguments: StorageBackend.available.filter { $0 != .sqliteFile })
    func validationTimesAreWrittenAChunkOfInstancesPerStatement(backend: StorageBackend) async throws {
        try await backend.with { opened in
            let count = Database.validationTimesPerStatement + 50
            try await Conformance.catalog(opened, limit: count)
            let (_, key) = try await Conformance.license(opened)
            for machine in 0..<count {
                guard case .activated = try await Conformance.activate(opened, key, machine: "m\(machine)") else {
                    Issue.record("machine \(machine) not activated"); return
                }
            }
            let ids = try await opened.sql.raw("SELECT id FROM instances ORDER BY id").all(decodingColumn: "id", as: String.self)
            try #require(ids.count == count)
            let now = Conformance.now
            // Validated later already (another process's flush): this flush must not move it back.
            try await opened.touchInstances([ids[0]: now + 100])

            let log = StatementLog()
            let database = Database(sql: CountingSQLDatabase(base: opened.sql, log: log), driver: backend == .postgres ? .postgres : .sqlite, close: {})
            var times = Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($1, now + Int64($0 % 7)) })
            times["no-such-instance"] = now
            try await database.touchInstances(times)

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
}
