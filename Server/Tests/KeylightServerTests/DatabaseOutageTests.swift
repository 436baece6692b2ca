import Foundation
import KeylightTestSupport
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import SQLKit
import Testing

/// The database going away while the server runs: 503 with Retry-After, no crash, recovery.
@Suite(.timeLimit(.minutes(6))) struct DatabaseOutageTests {
    @Test func closedDatabaseAnswers503AndTheServerStaysUp() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            await client.database.close()
            let reply = try await client.activate(seed)
            #expect(reply.status == .serviceUnavailable)
            #expect(reply.code == "UNAVAILABLE")
            #expect(reply["activated"] as? Bool == false)
            #expect(reply.headers[.retryAfter] != nil)
            #expect(try await client.request(.get, "/healthz").status == .ok)
        }
    }

    @Test(.enabled(if: PrerequisiteGate.enabled(StorageBackend.postgresURL != nil), "KEYLIGHT_TEST_POSTGRES_URL is not set"))
    func postgresConnectionsKilledMidRunRecover() async throws {
        let base = try #require(StorageBackend.postgresURL)
        let (name, url) = try await Database.createScratchDatabase(serverURL: base, logger: Harness.logger)
        let admin = try await Database.postgres(url: base, poolSize: 1, logger: Harness.logger)
        var harness = Harness()
        harness.configuration.databaseURL = url
        harness.configuration.masterKey = Base64.encode([UInt8](repeating: 9, count: 32))
        try await harness.run { client in
            let seed = try await client.seed()
            let instance = try #require(try await client.activate(seed)["instance_id"] as? String)
            // What a database restart does to the server's connections.
            let killed = try await admin.sql.raw("""
                SELECT pid, pg_terminate_backend(pid) AS terminated FROM pg_stat_activity WHERE datname = \(bind: name) AND pid <> pg_backend_pid()
                """).all()
            let pids = try killed.map { try $0.decode(column: "pid", as: Int.self) }
            #expect(!killed.isEmpty && killed.allSatisfy { (try? $0.decode(column: "terminated", as: Bool.self)) == true }, "no server connection was killed")
            var statuses: [Int] = []
            for _ in 0..<20 {
                let reply = try await client.validate(seed, instance: instance)
                statuses.append(reply.status.code)
                if reply.status == .serviceUnavailable { #expect(reply.headers[.retryAfter] != nil) }
                if reply.status == .ok { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(statuses.allSatisfy { $0 == 200 || $0 == 503 }, "\(statuses)")
            #expect(statuses.last == 200, "\(statuses)")
            // Recovered on new connections: none of the killed ones is still there.
            let alive = try await admin.sql.raw("SELECT pid FROM pg_stat_activity WHERE datname = \(bind: name)").all(decodingColumn: "pid", as: Int.self)
            #expect(Set(alive).isDisjoint(with: pids) && !alive.isEmpty, "\(alive) vs killed \(pids)")
        }
        await admin.close()
    }
}
