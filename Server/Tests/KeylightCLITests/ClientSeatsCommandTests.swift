import AsyncHTTPClient
import Foundation
import KeylightTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// `keylight client devices`, `deactivate --instance`, and the offline commands, against `keylight serve`.
@Suite(.serialized, .timeLimit(.minutes(6))) struct ClientSeatsCommandTests {
    @Test func devicesFreeingAnotherSeatAndTheOfflineRoundTrip() async throws {
        let fixture = try await ClientFixture.start()
        let (directory, server, http, auth, keysPath) = (fixture.directory, fixture.server, fixture.http, ClientFixture.auth, fixture.keysPath)
        try await fixture.admin(.POST, "/tenants/acme/products/app/key-types", #"{"id":"pro","display_name":"Pro","activation_limit":1,"fallback_access":false,"entitlements":["pro"]}"#)
        let key = try await fixture.license("pro")
        func client(_ store: String, _ arguments: [String], server url: String? = nil) async throws -> CLI.Result {
            try await fixture.client(store, arguments, server: url)
        }
        let json = ClientFixture.json

        #expect(try await client("old", ["activate", key]).status == 0)
        // The second machine hits the cap: the error lists the device to free.
        let full = try await client("new", ["activate", key])
        #expect(full.status == 1 && full.stderr.contains("ACTIVATION_LIMIT_REACHED") && full.stderr.contains("1 of 1 devices in use"), "\(full.stderr)")
        let listed = try json(try await client("new", ["devices", "--key", key]))
        let devices = try #require(listed["devices"] as? [[String: Any]])
        #expect(listed["activation_limit"] as? Int == 1 && devices.count == 1 && devices[0]["this_device"] as? Bool == false)
        let oldId = try #require(devices[0]["instance_id"] as? String)
        let unknown = try await client("new", ["deactivate", "--key", key, "--instance", "no-such-id"])
        #expect(unknown.status == 1 && unknown.stderr.contains("NOT_FOUND"))
        #expect(try await client("new", ["deactivate", "--key", key, "--instance", oldId]).status == 0)
        #expect(try json(try await client("new", ["activate", key]))["state"] as? String == "licensed")
        #expect(try json(try await client("new", ["devices"]))["devices"].map { ($0 as! [[String: Any]]).map { $0["this_device"] as? Bool } } == [true])
        #expect(try await client("new", ["deactivate"]).status == 0)

        // Offline: request on the dead-network machine, response made here, import there, proof submitted here.
        let dead = "http://127.0.0.1:9"
        let request = directory.appendingPathComponent("request.txt").path
        #expect(try await client("lab", ["offline-request", "--out", request], server: dead).status == 0)
        let response = directory.appendingPathComponent("response.txt").path
        let made = try await client("helper", ["offline-activate", "--request", request, key, "--out", response])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(SecretFilePermissions.mode(response) == 0o600)
        let imported = try json(try await client("lab", ["offline-import", "--response", response, key], server: dead))
        #expect(imported["state"] as? String == "licensed" && imported["entitlements"] as? [String] == ["pro"])
        let stolen = try await client("elsewhere", ["offline-import", "--response", response, key], server: dead)
        #expect(stolen.status == 1 && stolen.stderr.contains("OFFLINE_FILE"))
        let proof = directory.appendingPathComponent("proof.txt").path
        #expect(try await client("lab", ["offline-deactivate", "--out", proof], server: dead).status == 0)
        let submitted = try await client("helper", ["submit-proof", "--proof", proof, key])
        #expect(submitted.status == 0 && submitted.stdout.contains("\"deactivated\":true"), "\(submitted.stderr)")
        #expect((try json(try await client("helper", ["devices", "--key", key]))["devices"] as? [Any])?.isEmpty == true)

        // A product whose prefix is not 4 characters (protocol 6.1 allows 2-8): the commands take
        // the prefix from the key itself.
        let short = try await server.request(.POST, "/admin/v1/tenants/acme/products", headers: auth, json: #"{"id":"ab","name":"AB","key_prefix":"AB"}"#, using: http)
        let shortSDKKey = try #require(short.body["sdk_key"] as? String)
        _ = try await server.request(.POST, "/admin/v1/tenants/acme/products/ab/key-types", headers: auth, json: #"{"id":"pro","display_name":"Pro","activation_limit":1,"fallback_access":false,"entitlements":[]}"#, using: http)
        let shortLicense = try await server.request(.POST, "/admin/v1/tenants/acme/products/ab/licenses", headers: auth, json: #"{"key_type_id":"pro"}"#, using: http)
        let shortKey = try #require(shortLicense.body["license_key"] as? String)
        let shortActivation = try await CLI.run(["client", "--server", "http://127.0.0.1:\(server.port)", "--tenant", "acme", "--product", "ab", "--sdk-key", shortSDKKey,
                                                  "--keys", keysPath.path, "--store", directory.appendingPathComponent("short").path, "activate", shortKey])
        #expect(shortActivation.status == 0 && shortActivation.stdout.contains("\"licensed\""), "\(shortActivation.stderr)")
        _ = await server.terminate()
    }
}

enum SecretFilePermissions {
    static func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int).map { $0 & 0o777 }
    }
}
