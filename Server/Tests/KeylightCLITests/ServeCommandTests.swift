import AsyncHTTPClient
import Foundation
import KeylightTestSupport
import KeylightCore
import KeylightServer
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Testing

/// `keylight serve` and `keylight migrate` as processes: first start, the admin token, and
/// graceful shutdown without losing a committed write.
@Suite(.serialized, .timeLimit(.minutes(6))) struct ServeCommandTests {
    static func databasePath() throws -> String {
        try temporaryDirectory().appendingPathComponent("keylight.sqlite").path
    }

    @Test func firstStartCreatesTheTokenOncePrintsItAndSecuresFiles() async throws {
        let path = try Self.databasePath()
        let http = HTTPClient.shared

        let first = try await ServerProcess(database: path)
        let token = try #require(first.stdout.components(separatedBy: "klt_").dropFirst().first.map { "klt_" + $0.prefix { !$0.isWhitespace } })
        // The protocol's token form, with a checksum a secret scanner can check.
        #expect(AdminToken.isWellFormed(token) && token.utf8.count == 50)
        let authorized = try await first.request(.GET, "/admin/v1/tenants", headers: [("Authorization", "Bearer \(token)")], using: http)
        #expect(authorized.status == 200)
        #expect(await first.terminate() == 0)
        #expect(SecretFile.permissions(of: path) == 0o600)
        #expect(SecretFile.permissions(of: path + ".master-key") == 0o600)

        let second = try await ServerProcess(database: path)
        #expect(!second.stdout.contains("klt_"))
        #expect(try await second.request(.GET, "/admin/v1/tenants", headers: [("Authorization", "Bearer \(token)")], using: http).status == 200)
        #expect(await second.terminate() == 0)
    }

    @Test func adminTokenFromTheEnvironment() async throws {
        let http = HTTPClient.shared
        let server = try await ServerProcess(database: try Self.databasePath(), environment: ["KEYLIGHT_ADMIN_TOKEN": "chosen-token"])
        #expect(!server.stdout.contains("klt_"))
        #expect(try await server.request(.GET, "/admin/v1/tenants", headers: [("Authorization", "Bearer chosen-token")], using: http).status == 200)
        #expect(try await server.request(.GET, "/admin/v1/tenants", headers: [("Authorization", "Bearer other")], using: http).status == 401)
        #expect(await server.terminate() == 0)
    }

    /// `--admin-token-file`: the first-start token goes to the file (0600), never to the output;
    /// `keylight token rotate` replaces it at once on the running server; and a token once replaced
    /// (by the environment's) does not come back when the variable is removed.
    @Test func theTokenFileRotationAndNoResurrection() async throws {
        let http = HTTPClient.shared
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("keylight.sqlite").path
        let file = directory.appendingPathComponent("admin-token").path
        let server = try await ServerProcess(database: path, arguments: ["--admin-token-file", file])
        let first = try #require(String(data: try Data(contentsOf: URL(fileURLWithPath: file)), encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(AdminToken.isWellFormed(first) && SecretFile.permissions(of: file) == 0o600)
        #expect(!server.stdout.contains(first) && server.stdout.contains("written to \(file)"))
        #expect(try await server.request(.GET, "/admin/v1/tenants", headers: [("Authorization", "Bearer \(first)")], using: http).status == 200)

        let rotated = try await CLI.run(["token", "rotate", "--db", path, "--admin-token-file", file])
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let second = try #require(String(data: try Data(contentsOf: URL(fileURLWithPath: file)), encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(second != first && AdminToken.isWellFormed(second) && !rotated.stdout.contains(second) && !rotated.stderr.contains(second))
        // At once, on the server that was already running.
        #expect(try await server.request(.GET, "/admin/v1/tenants", headers: [("Authorization", "Bearer \(first)")], using: http).status == 401)
        #expect(try await server.request(.GET, "/admin/v1/tenants", headers: [("Authorization", "Bearer \(second)")], using: http).status == 200)
        #expect(await server.terminate() == 0)

        // The environment's token replaces the stored one for good.
        let chosen = try await ServerProcess(database: path, environment: ["KEYLIGHT_ADMIN_TOKEN": "chosen-token"])
        #expect(try await chosen.request(.GET, "/admin/v1/tenants", headers: [("Authorization", "Bearer \(second)")], using: http).status == 401)
        #expect(await chosen.terminate() == 0)
        let unset = try await ServerProcess(database: path)
        #expect(!unset.stdout.contains("klt_"))
        #expect(try await unset.request(.GET, "/admin/v1/tenants", headers: [("Authorization", "Bearer \(second)")], using: http).status == 401)
        #expect(try await unset.request(.GET, "/admin/v1/tenants", headers: [("Authorization", "Bearer chosen-token")], using: http).status == 200)
        let audit = try await unset.request(.GET, "/admin/v1/audit-log", headers: [("Authorization", "Bearer chosen-token")], using: http)
        #expect((audit.body["entries"] as? [[String: Any]] ?? []).filter { $0["action"] as? String == "admin_token.rotate" }.count == 2)
        #expect(await unset.terminate() == 0)
    }

    @Test func sigtermLosesNoCommittedWrite() async throws {
        let path = try Self.databasePath()
        let http = HTTPClient.shared
        let auth = [("Authorization", "Bearer t")]
        let server = try await ServerProcess(database: path, environment: ["KEYLIGHT_ADMIN_TOKEN": "t"], arguments: ["--rate-limit-address", "0", "--rate-limit-license", "0"])
        let (sdkKey, key, licenseId) = try await server.seedLicense(token: "t")

        // Activations in flight while SIGTERM arrives: every one answered 200 must be on disk.
        // SIGTERM goes out when the tenth answer arrives (not at a fixed task index: tasks start in
        // any order, and a signal before the first request would test nothing).
        let answered = NIOLockedValueBox(0)
        let results = try await withThrowingTaskGroup(of: String?.self) { group in
            for index in 0..<150 {
                group.addTask {
                    let reply = try? await server.request(.POST, "/acme/app/activate", headers: [("X-Keylight-SDK-Key", sdkKey)],
                                                          json: #"{"license_key":"\#(key)","instance_name":"n","machine_hash":"m\#(index)"}"#, timeout: .seconds(3), using: http)
                    if reply?.status == 200, answered.withLockedValue({ $0 += 1; return $0 }) == 10 {
                        _ = kill(server.process.processIdentifier, SIGTERM)
                    }
                    return reply?.status == 200 ? reply?.body["instance_id"] as? String : nil
                }
            }
            return try await group.reduce(into: [String]()) { if let id = $1 { $0.append(id) } }
        }
        #expect(await server.terminate() == 0)
        #expect(!results.isEmpty)

        let restarted = try await ServerProcess(database: path, environment: ["KEYLIGHT_ADMIN_TOKEN": "t"])
        let detail = try await restarted.request(.GET, "/admin/v1/tenants/acme/products/app/licenses/\(licenseId)", headers: auth, using: http)
        let stored = Set(((detail.body["instances"] as? [[String: Any]]) ?? []).compactMap { $0["instance_id"] as? String })
        #expect(Set(results).isSubset(of: stored))
        #expect(detail.body["active_instances"] as? Int == stored.count)
        #expect(await restarted.terminate() == 0)
    }

    @Test func migrateAppliesOnceAndReports() async throws {
        let path = try Self.databasePath()
        let first = try await CLI.run(["migrate", "--db", path])
        #expect(first.status == 0, "\(first.stderr)")
        let applied = first.stdout.split(separator: "\n").filter { $0.hasPrefix("applied ") }.map { $0.dropFirst("applied ".count) }
        #expect(applied.first == "0001_initial_schema")
        #expect(applied == applied.sorted())  // named, in order
        let second = try await CLI.run(["migrate", "--db", path])
        #expect(second.status == 0)
        #expect(!second.stdout.contains("applied 0"))
        #expect(second.stdout.contains("database is at \(applied.last ?? "") (\(applied.count) applied)"))
    }

    @Test func unusableDatabaseFailsWithAClearError() async throws {
        let result = try await CLI.run(["serve", "--port", "0", "--db", "/nonexistent-dir/x/keylight.sqlite"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("keylight: error"))
    }

    /// A root file that holds no certificate is the operator's error, said before anything opens
    /// (no database file is created, and nothing crashes).
    @Test func anUnusableAppStoreRootFailsWithAClearError() async throws {
        let directory = try temporaryDirectory()
        let root = directory.appendingPathComponent("root.pem")
        try Data("not a certificate".utf8).write(to: root)
        let database = directory.appendingPathComponent("k.sqlite")
        let result = try await CLI.run(["serve", "--port", "0", "--db", database.path, "--appstore-root-cert", root.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("keylight: error: cannot start: \(root.path) holds no PEM certificate"))
        #expect(!FileManager.default.fileExists(atPath: database.path))
    }
}
