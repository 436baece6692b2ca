import AsyncHTTPClient
import Foundation
import KeylightTestSupport
import KeylightCore
@testable import KeylightServer
import Logging
import NIOCore
import NIOHTTP1
import Testing

/// Several `keylight serve` processes on one PostgreSQL database (needs KEYLIGHT_TEST_POSTGRES_URL; CI sets it).
@Suite(.serialized, .enabled(if: PrerequisiteGate.enabled(ProcessInfo.processInfo.environment["KEYLIGHT_TEST_POSTGRES_URL"] != nil), "KEYLIGHT_TEST_POSTGRES_URL is not set"), .timeLimit(.minutes(6)))
struct MultiProcessTests {
    /// A new, empty database on the test server; returns its URL.
    static func freshDatabase(on variable: String = "KEYLIGHT_TEST_POSTGRES_URL") async throws -> String {
        let base = try #require(ProcessInfo.processInfo.environment[variable])
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return try await Database.createScratchDatabase(serverURL: base, logger: logger).url
    }

    /// `count` servers on the database named in `arguments` (`--database-url`), each with an unused
    /// SQLite path, sharing one artifacts folder in `directory` unless `arguments` names one.
    static func servers(_ count: Int, in directory: URL, environment: [String: String], arguments: [String]) async throws -> [ServerProcess] {
        var servers: [ServerProcess] = []
        let artifacts = arguments.contains("--artifacts-dir") ? [] : ["--artifacts-dir", directory.appendingPathComponent("artifacts").path]
        for index in 0..<count {
            servers.append(try await ServerProcess(database: directory.appendingPathComponent("unused\(index).sqlite").path, environment: environment, arguments: arguments + artifacts))
        }
        return servers
    }

    @Test func threeProcessesShareTheCapKeysAndAuditLog() async throws {
        let url = try await Self.freshDatabase()
        let environment = ["KEYLIGHT_ADMIN_TOKEN": "t", "KEYLIGHT_MASTER_KEY": Base64.encode([UInt8](repeating: 3, count: 32))]
        let arguments = ["--database-url", url, "--rate-limit-address", "0", "--rate-limit-license", "0", "--key-refresh-interval", "1", "--pool-size", "6"]
        let directory = try temporaryDirectory()
        let servers = try await Self.servers(3, in: directory, environment: environment, arguments: arguments)
        let http = HTTPClient.shared
        let auth = [("Authorization", "Bearer t")]
        let first = servers[0]
        let (sdkKey, key, licenseId) = try await first.seedLicense(token: "t", seats: 5, entitlements: #"["pro"]"#)

        // 600 concurrent activations, distinct machines, spread across the three processes.
        let results = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            for index in 0..<600 {
                let server = servers[index % 3]
                group.addTask {
                    // The deadline counts the wait for one of the client's pooled connections: 600
                    // requests queue behind a few, which under a loaded machine takes more than 30 s.
                    let reply = try await server.request(.POST, "/acme/app/activate", headers: [("X-Keylight-SDK-Key", sdkKey)],
                                                          json: #"{"license_key":"\#(key)","instance_name":"n","machine_hash":"m\#(index)"}"#, timeout: .seconds(120), using: http)
                    return (reply.status, reply.body["instance_id"] as? String)
                }
            }
            return try await group.reduce(into: [(Int, String?)]()) { $0.append($1) }
        }
        #expect(results.filter { $0.0 == 200 }.count == 5)
        #expect(results.filter { $0.0 == 409 }.count == 595)
        let detail = try await servers[2].request(.GET, "/admin/v1/tenants/acme/products/app/licenses/\(licenseId)", headers: auth, using: http)
        let instances = ((detail.body["instances"] as? [[String: Any]]) ?? []).filter { $0["active"] as? Bool == true }
        #expect(instances.count == 5)
        #expect(detail.body["active_instances"] as? Int == 5)

        // A rotation on one process reaches the others' leases and signed responses.
        let rotated = try await first.request(.POST, "/admin/v1/signing-keys/rotate", headers: auth, using: http)
        let newKid = try #require(rotated.body["kid"] as? String)
        let instance = try #require(results.first { $0.0 == 200 }?.1)
        var kidSeen = ""
        var signatureKid = ""
        for _ in 0..<60 where kidSeen != newKid || signatureKid != newKid {
            try await Task.sleep(for: .milliseconds(250))
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(servers[1].port)/acme/app/validate")
            request.method = .POST
            request.headers.add(name: "X-Keylight-SDK-Key", value: sdkKey)
            request.headers.add(name: "X-Keylight-Nonce", value: ResponseNonce().header)
            request.body = .bytes(ByteBuffer(string: #"{"license_key":"\#(key)","instance_id":"\#(instance)"}"#))
            let response = try await http.execute(request, timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 1 << 20)
            let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
            kidSeen = ((object?["lease"] as? [String: Any])?["kid"] as? String) ?? ""
            signatureKid = response.headers.first(name: "X-Keylight-Signature-Kid") ?? ""
        }
        #expect(kidSeen == newKid)
        #expect(signatureKid == newKid)

        // One audit log: changes made through process 1 read back through process 3.
        let audit = try await servers[2].request(.GET, "/admin/v1/audit-log?limit=50", headers: auth, using: http)
        let actions = ((audit.body["entries"] as? [[String: Any]]) ?? []).compactMap { $0["action"] as? String }
        #expect(actions.contains("signing_key.rotate") && actions.contains("license.create") && actions.contains("tenant.create"))
        for server in servers { #expect(await server.terminate() == 0) }
    }

    @Test func unreachableDatabaseIsAClearErrorAtStart() async throws {
        let result = try await CLI.run(["serve", "--port", "0", "--database-url", "postgres://nobody:secret-pass@127.0.0.1:1/none"],
                                 stdin: nil)
        #expect(result.status != 0)
        #expect(result.stderr.contains("cannot reach the database"))
        #expect(!result.stderr.contains("secret-pass"))
    }
}
