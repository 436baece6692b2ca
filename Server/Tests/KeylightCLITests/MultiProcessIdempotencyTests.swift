import AsyncHTTPClient
import Foundation
import KeylightCore
import KeylightTestSupport
import Testing

/// `Idempotency-Key` across `keylight serve` processes on one PostgreSQL database: a retried mint
/// sent to every process at once mints once.
@Suite(.serialized, .timeLimit(.minutes(6)), .enabled(
    if: PrerequisiteGate.enabled(ProcessInfo.processInfo.environment["KEYLIGHT_TEST_POSTGRES_URL"] != nil),
    "KEYLIGHT_TEST_POSTGRES_URL is not set"
))
struct MultiProcessIdempotencyTests {
    @Test func oneKeyAcrossThreeProcessesHasOneEffect() async throws {
        let url = try await MultiProcessTests.freshDatabase()
        let directory = try temporaryDirectory()
        let environment = ["KEYLIGHT_ADMIN_TOKEN": "t", "KEYLIGHT_MASTER_KEY": Base64.encode([UInt8](repeating: 5, count: 32))]
        let servers = try await MultiProcessTests.servers(3, in: directory, environment: environment, arguments: ["--database-url", url, "--rate-limit-address", "0"])
        _ = try await servers[0].seedLicense(token: "t")
        let body = #"{"key_type_id":"pro","customer_email":"once@example.com"}"#
        let replies = try await withThrowingTaskGroup(of: (Int, String?, String?).self) { group in
            for index in 0..<30 {
                group.addTask {
                    let reply = try await servers[index % 3].request(.POST, "/admin/v1/tenants/acme/products/app/licenses",
                                                                     headers: [("Authorization", "Bearer t"), ("Idempotency-Key", "mint-across-processes")],
                                                                     json: body, using: .shared)
                    return (reply.status, reply.body["license_key"] as? String, reply.body["code"] as? String)
                }
            }
            return try await group.reduce(into: [(Int, String?, String?)]()) { $0.append($1) }
        }
        let created = replies.filter { $0.0 == 201 }
        #expect(created.count + replies.filter { $0.2 == "IDEMPOTENCY_IN_PROGRESS" }.count == 30, "\(replies.map(\.0))")
        #expect(Set(created.compactMap(\.1)).count == 1, "every 201 is the one mint's answer")
        let listed = try await servers[1].request(.GET, "/admin/v1/tenants/acme/products/app/licenses?email=once@example.com", headers: [("Authorization", "Bearer t")], using: .shared)
        #expect((listed.body["licenses"] as? [Any])?.count == 1)
        for server in servers { #expect(await server.terminate() == 0) }
    }
}
