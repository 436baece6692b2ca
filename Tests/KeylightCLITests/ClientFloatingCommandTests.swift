import AsyncHTTPClient
import Foundation
import KeylightFuzzSupport
import NIOCore
import Testing

/// `keylight client` with a floating license and an "updates until" license, against `keylight serve`.
@Suite(.serialized, .timeLimit(.minutes(3))) struct ClientFloatingCommandTests {
    @Test func aFloatingSeatIsReleasedAndRetakenAndANewerBuildRunsLimited() async throws {
        let directory = try temporaryDirectory()
        let http = HTTPClient.shared
        let auth = [("Authorization", "Bearer t")]
        let server = try await ServerProcess(database: directory.appendingPathComponent("s.sqlite").path, environment: ["KEYLIGHT_ADMIN_TOKEN": "t"])
        _ = try await server.request(.POST, "/admin/v1/tenants", headers: auth, json: #"{"id":"acme","name":"Acme"}"#, using: http)
        let product = try await server.request(.POST, "/admin/v1/tenants/acme/products", headers: auth, json: #"{"id":"app","name":"App","key_prefix":"ACME"}"#, using: http)
        let sdkKey = try #require(product.body["sdk_key"] as? String)
        _ = try await server.request(.POST, "/admin/v1/tenants/acme/products/app/key-types", headers: auth,
                                     json: #"{"id":"site","display_name":"Site","activation_limit":1,"fallback_access":false,"entitlements":["pro"],"floating":true,"heartbeat_seconds":300}"#, using: http)
        _ = try await server.request(.POST, "/admin/v1/tenants/acme/products/app/key-types", headers: auth,
                                     json: #"{"id":"year","display_name":"Year of updates","activation_limit":2,"fallback_access":false,"entitlements":["pro"],"updates_days":365}"#, using: http)
        let floating = try #require(try await server.request(.POST, "/admin/v1/tenants/acme/products/app/licenses", headers: auth, json: #"{"key_type_id":"site"}"#, using: http).body["license_key"] as? String)
        let yearly = try #require(try await server.request(.POST, "/admin/v1/tenants/acme/products/app/licenses", headers: auth, json: #"{"key_type_id":"year"}"#, using: http).body["license_key"] as? String)
        var keysRequest = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/acme/.well-known/keylight-keys")
        keysRequest.method = .GET
        let keysPath = directory.appendingPathComponent("keys.json")
        try Data(try await http.execute(keysRequest, timeout: .seconds(10)).body.collect(upTo: 1 << 16).readableBytesView).write(to: keysPath)

        func client(_ store: String, _ arguments: [String], release: String? = nil) async throws -> CLI.Result {
            try await CLI.run(["client", "--server", "http://127.0.0.1:\(server.port)", "--tenant", "acme", "--product", "app", "--sdk-key", sdkKey,
                               "--keys", keysPath.path, "--store", directory.appendingPathComponent(store).path]
                              + (release.map { ["--app-release-date", $0] } ?? []) + arguments)
        }
        func json(_ result: CLI.Result) throws -> [String: Any] {
            try #require((try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any], "\(result.stdout) \(result.stderr)")
        }

        let first = try json(try await client("a", ["activate", floating]))
        #expect(first["state"] as? String == "licensed" && first["floating"] as? Bool == true)
        let full = try await client("b", ["activate", floating])
        #expect(full.status == 1 && full.stderr.contains("ACTIVATION_LIMIT_REACHED"))
        // "a" quits: its seat is given back and the key kept.
        let released = try json(try await client("a", ["release-seat"]))
        #expect(released["state"] as? String == "limited" && released["instance_id"] is NSNull)
        #expect(try json(try await client("b", ["activate", floating]))["state"] as? String == "licensed")
        // "a" launches again: the seat is taken, so it runs limited with the holder named.
        let waiting = try json(try await client("a", ["status"]))
        #expect(waiting["state"] as? String == "limited" && waiting["last_error"] as? String == "ACTIVATION_LIMIT_REACHED")
        #expect(try json(try await client("b", ["release-seat"]))["state"] as? String == "limited")
        #expect(try json(try await client("a", ["refresh"]))["state"] as? String == "licensed")
        let notFloating = try await client("c", ["release-seat"])
        #expect(notFloating.status == 1 && notFloating.stderr.contains("NOT_FLOATING"))

        // Updates until: the date is printed; a build released after it runs limited, an earlier one licensed.
        let old = try json(try await client("old", ["activate", yearly], release: "2020-01-01"))
        #expect(old["state"] as? String == "licensed" && old["entitlements"] as? [String] == ["pro"])
        let until = try #require(old["updates_until"] as? Int)
        #expect(abs(until - Int(Date().timeIntervalSince1970) - 365 * 86_400) < 300)
        let future = try json(try await client("new", ["activate", yearly], release: "2100-01-01"))
        #expect(future["state"] as? String == "limited" && (future["reason"] as? String)?.contains("newer than the updates") == true)
        let bad = try await client("new", ["status"], release: "someday")
        #expect(bad.status != 0 && bad.stderr.contains("--app-release-date"))
    }
}
