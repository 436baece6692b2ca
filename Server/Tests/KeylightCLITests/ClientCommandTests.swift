import AsyncHTTPClient
import Foundation
import KeylightTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// `keylight client` as a user runs it, against `keylight serve`.
@Suite(.serialized, .timeLimit(.minutes(6))) struct ClientCommandTests {
    @Test func activateStatusOfflineAndDeactivate() async throws {
        let directory = try temporaryDirectory()
        let http = HTTPClient.shared
        let auth = [("Authorization", "Bearer t")]
        var server = try await ServerProcess(database: directory.appendingPathComponent("s.sqlite").path, environment: ["KEYLIGHT_ADMIN_TOKEN": "t"])
        _ = try await server.request(.POST, "/admin/v1/tenants", headers: auth, json: #"{"id":"acme","name":"Acme"}"#, using: http)
        let product = try await server.request(.POST, "/admin/v1/tenants/acme/products", headers: auth, json: #"{"id":"app","name":"App","key_prefix":"ACME","trial_duration_days":7,"free_tier_enabled":false}"#, using: http)
        let sdkKey = try #require(product.body["sdk_key"] as? String)
        _ = try await server.request(.POST, "/admin/v1/tenants/acme/products/app/key-types", headers: auth, json: #"{"id":"pro","display_name":"Pro","activation_limit":1,"duration_days":null,"fallback_access":false,"entitlements":["pro"]}"#, using: http)
        let license = try await server.request(.POST, "/admin/v1/tenants/acme/products/app/licenses", headers: auth, json: #"{"key_type_id":"pro"}"#, using: http)
        let key = try #require(license.body["license_key"] as? String)

        // The app's trusted keys, as a developer would save them.
        var keysRequest = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/.well-known/keylight-keys.json")
        keysRequest.method = .GET
        let keysBody = try await http.execute(keysRequest, timeout: .seconds(10)).body.collect(upTo: 1 << 16)
        let keysPath = directory.appendingPathComponent("keys.json")
        try Data(keysBody.readableBytesView).write(to: keysPath)

        func client(_ arguments: [String], port: Int) async throws -> CLI.Result {
            try await CLI.run(["client", "--server", "http://127.0.0.1:\(port)", "--tenant", "acme", "--product", "app", "--sdk-key", sdkKey,
                         "--keys", keysPath.path, "--store", directory.appendingPathComponent("store").path] + arguments)
        }
        func state(_ result: CLI.Result) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout) \(result.stderr)")
        }

        let before = try await client(["status"], port: server.port)
        #expect(before.status == 0)
        #expect(try state(before)["state"] as? String == "trial")
        #expect(try state(before)["days_left"] as? Int == 7)

        let bad = try await client(["activate", "ACME-0000-0000-0000-0000"], port: server.port)
        #expect(bad.status == 1)
        #expect(bad.stderr.hasPrefix("keylight: error: NOT_FOUND"))

        let activated = try await client(["activate", key], port: server.port)
        #expect(activated.status == 0, "\(activated.stderr)")
        #expect(try state(activated)["state"] as? String == "licensed")
        #expect(try state(activated)["entitlements"] as? [String] == ["pro"])
        // Nothing in the store holds the key in clear.
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("store").path) {
            let bytes = try Data(contentsOf: directory.appendingPathComponent("store").appendingPathComponent(file))
            #expect(bytes.range(of: Data(key.utf8)) == nil)
        }

        let port = server.port
        #expect(await server.terminate() == 0)
        let offline = try await client(["status"], port: port)
        #expect(try state(offline)["state"] as? String == "licensed")

        server = try await ServerProcess(database: directory.appendingPathComponent("s.sqlite").path, environment: ["KEYLIGHT_ADMIN_TOKEN": "t"])
        let refreshed = try await client(["--verification", "enforced", "refresh"], port: server.port)
        #expect(try state(refreshed)["state"] as? String == "licensed")
        #expect(try state(refreshed)["last_error"] is NSNull)
        #expect(try state(refreshed)["verification"] as? String == "verified")
        let unverified = try await client(["--verification", "disabled", "status"], port: server.port)
        #expect(try state(unverified)["verification"] as? String == "notRequested")
        let deactivated = try await client(["deactivate"], port: server.port)
        #expect(deactivated.status == 0)
        #expect(try state(deactivated)["state"] as? String == "trial")
        #expect(try state(deactivated)["instance_id"] is NSNull)
        #expect(await server.terminate() == 0)
    }
}
