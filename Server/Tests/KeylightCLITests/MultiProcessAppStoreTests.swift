import AsyncHTTPClient
import Foundation
import KeylightCore
import KeylightTestSupport
import Testing

/// One App Store purchase exchanged at two `keylight serve` processes on one PostgreSQL
/// database at once: one license, one key, whichever process minted it.
@Suite(.serialized, .enabled(if: PrerequisiteGate.enabled(ProcessInfo.processInfo.environment["KEYLIGHT_TEST_POSTGRES_URL"] != nil), "KEYLIGHT_TEST_POSTGRES_URL is not set"), .timeLimit(.minutes(6)))
struct MultiProcessAppStoreTests {
    @Test func oneExchangeRaceAcrossTwoProcessesMintsOneLicense() async throws {
        guard await AppStoreScriptTests.libraryInstalled() else {
            try PrerequisiteGate.missing("Apple's app-store-server-library (pip install app-store-server-library==3.1.2)")
            return
        }
        let directory = try temporaryDirectory()
        let generated = try await ChildProcess.python(CLI.packageRoot.appendingPathComponent("Tests/AppStore/appstore_cases.py").path, [directory.appendingPathComponent("chain").path], mergeStandardError: false)
        let data = try #require(try JSONSerialization.jsonObject(with: generated.stdout) as? [String: Any])
        let jws = try #require((data["extra"] as? [String: Any])?["race"] as? String)
        let url = try await MultiProcessTests.freshDatabase()
        let servers = try await MultiProcessTests.servers(2, in: directory, environment: [
            "KEYLIGHT_ADMIN_TOKEN": "t", "KEYLIGHT_MASTER_KEY": Base64.encode([UInt8](repeating: 5, count: 32)),
        ], arguments: ["--database-url", url, "--appstore-root-cert", directory.appendingPathComponent("chain/root.pem").path,
                       "--rate-limit-address", "0", "--rate-limit-license", "0", "--pool-size", "6"])
        let (http, auth) = (HTTPClient.shared, [("Authorization", "Bearer t")])
        let (sdkKey, _, _) = try await servers[0].seedLicense(token: "t")
        _ = try await servers[0].request(.PATCH, "/admin/v1/tenants/acme/products/app", headers: auth, json: #"{"appstore_bundle_id":"com.acme.app"}"#, using: http)
        _ = try await servers[0].request(.PATCH, "/admin/v1/tenants/acme/products/app/key-types/pro", headers: auth, json: #"{"appstore_product_id":"com.acme.app.pro"}"#, using: http)
        let answers = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            for index in 0..<50 {
                let server = servers[index % 2]
                group.addTask {
                    let reply = try await server.request(.POST, "/acme/app/appstore/activate", headers: [("X-Keylight-SDK-Key", sdkKey)],
                                                          json: #"{"signed_transaction":"\#(jws)","instance_name":"Mac","machine_hash":"one-mac"}"#, using: http)
                    return (reply.status, reply.body["license_key"] as? String)
                }
            }
            return try await group.reduce(into: [(Int, String?)]()) { $0.append($1) }
        }
        let licenses = try await servers[1].request(.GET, "/admin/v1/tenants/acme/products/app/licenses?limit=500", headers: auth, using: http)
        for server in servers { _ = await server.terminate() }
        #expect(answers.allSatisfy { $0.0 == 200 }, "\(answers.map(\.0))")
        #expect(Set(answers.compactMap(\.1)).count == 1)
        let fromAppStore = ((licenses.body["licenses"] as? [[String: Any]]) ?? []).filter { $0["payment_source"] as? String == "appstore" }
        #expect(fromAppStore.count == 1)
    }
}
