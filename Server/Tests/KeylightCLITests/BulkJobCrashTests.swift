import AsyncHTTPClient
import Foundation
import KeylightTestSupport
import KeylightCore
import KeylightServerTestSupport
import Testing

/// A bulk license job killed half-way (SIGKILL, no shutdown) and resumed by the restarted server:
/// every license it selected is changed exactly once, with one audit entry each (issue 49).
@Suite(.serialized, .timeLimit(.minutes(6))) struct BulkJobCrashTests {
    @Test(arguments: CrashTests.Backend.allCases)
    func aJobKilledHalfWayResumesWithoutApplyingTwice(backend: CrashTests.Backend) async throws {
        let (database, arguments) = try await CrashTests.storage(backend)
        let http = HTTPClient.shared
        let auth = CrashTests.auth
        let server = try await ServerProcess(database: database, environment: CrashTests.environment, arguments: arguments)
        _ = try await server.seedLicense(token: "t", seats: 2)
        // 400 licenses of key type pro (one from seeding), minted eight at a time.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for _ in 0..<(worker == 0 ? 49 : 50) {
                        let minted = try await server.request(.POST, "/admin/v1/tenants/acme/products/app/licenses", headers: auth, json: #"{"key_type_id":"pro"}"#, using: http)
                        guard minted.status == 201 else { throw ServerProcessError(output: "minting answered \(minted.status)") }
                    }
                }
            }
            try await group.waitForAll()
        }
        let started = try await server.request(.POST, "/admin/v1/tenants/acme/products/app/licenses/bulk", headers: auth,
                                               json: #"{"filter":{"key_type_id":"pro"},"change":{"limit_add":3}}"#, using: http)
        let job = try #require(started.body["id"] as? String, "\(started)")
        #expect(started.status == 202 && started.body["total"] as? Int == 400)

        // Killed as soon as the job is under way (the server works it through in the background).
        let deadline = ContinuousClock.now + .seconds(60)
        var doneAtKill = 0
        while ContinuousClock.now < deadline {
            let status = try await server.request(.GET, "/admin/v1/tenants/acme/products/app/licenses/bulk/\(job)", headers: auth, using: http)
            doneAtKill = status.body["done"] as? Int ?? 0
            if doneAtKill > 0 { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        _ = kill(server.process.processIdentifier, SIGKILL)
        try #require(try await CrashTests.exits(server.process, within: .seconds(10)))
        #expect(doneAtKill > 0 && doneAtKill < 400, "the kill came at \(doneAtKill) of 400")

        let restarted = try await ServerProcess(database: database, environment: CrashTests.environment, arguments: arguments)
        var finished: [String: Any] = [:]
        let resumeDeadline = ContinuousClock.now + .seconds(90)
        while ContinuousClock.now < resumeDeadline {
            finished = try await restarted.request(.GET, "/admin/v1/tenants/acme/products/app/licenses/bulk/\(job)", headers: auth, using: http).body
            if finished["state"] as? String == "done" { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(finished["state"] as? String == "done" && finished["done"] as? Int == 400 && finished["updated"] as? Int == 400, "\(finished)")
        // Every license exactly once: 2 + 3, never 8.
        var limits: [Int: Int] = [:]
        var cursor: String?
        repeat {
            let page = try await restarted.request(.GET, "/admin/v1/tenants/acme/products/app/licenses?limit=500" + (cursor.map { "&cursor=\($0)" } ?? ""), headers: auth, using: http).body
            for license in page["licenses"] as? [[String: Any]] ?? [] { limits[license["activation_limit"] as? Int ?? -1, default: 0] += 1 }
            cursor = page["next_cursor"] as? String
        } while cursor != nil
        #expect(limits == [5: 400], "\(limits)")
        var updates = 0
        var auditCursor: String?
        repeat {
            let page = try await restarted.request(.GET, "/admin/v1/audit-log?tenant=acme&limit=500" + (auditCursor.map { "&cursor=\($0)" } ?? ""), headers: auth, using: http).body
            updates += (page["entries"] as? [[String: Any]] ?? []).filter { $0["action"] as? String == "license.update" }.count
            auditCursor = page["next_cursor"] as? String
        } while auditCursor != nil
        #expect(updates == 400)
        #expect(await restarted.terminate() == 0)
    }
}
