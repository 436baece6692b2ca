import Foundation
import KeylightCore
import KeylightTestSupport
import Testing

/// Release delivery from outside (issue 51): `Tests/Releases/release_flow.py` drives two
/// `keylight serve` processes on one PostgreSQL database, with one master key and one shared
/// `--artifacts-dir`, over HTTP and through `keylight release publish`: a build published on one
/// process is in the other's appcast and downloaded from it (signature checked with pyca's
/// Ed25519), a build past the license's update window is informational, a CI token publishes and
/// does nothing else, a yank leaves the other process's feed, and a cut-off upload leaves nothing.
@Suite(.serialized, .enabled(if: PrerequisiteGate.enabled(ProcessInfo.processInfo.environment["KEYLIGHT_TEST_POSTGRES_URL"] != nil), "KEYLIGHT_TEST_POSTGRES_URL is not set"), .timeLimit(.minutes(6)))
struct ReleaseFlowTests {
    /// Whether `python3` can import pyca/cryptography (.ci/run installs it).
    static func cryptographyInstalled() async -> Bool {
        (try? await ChildProcess.python("-c", ["import cryptography"]))?.status == 0
    }

    @Test func releasesReachEveryProcessAsEachLicenseIsEntitledToThem() async throws {
        guard await Self.cryptographyInstalled() else {
            try PrerequisiteGate.missing("the cryptography Python package (pip install cryptography==48.0.0)")
            return
        }
        let directory = try temporaryDirectory()
        let artifacts = directory.appendingPathComponent("artifacts")
        let url = try await MultiProcessTests.freshDatabase()
        let token = "release-flow-token"
        let masterKey = Base64.encode((0..<32).map { _ in UInt8.random(in: 0...255) })
        let servers = try await MultiProcessTests.servers(2, in: directory, environment: [
            "KEYLIGHT_ADMIN_TOKEN": token, "KEYLIGHT_MASTER_KEY": masterKey,
        ], arguments: ["--database-url", url, "--artifacts-dir", artifacts.path,
                       "--rate-limit-address", "0", "--rate-limit-license", "0", "--pool-size", "4"])
        let run: (status: Int32, output: String)
        do {
            run = try await CLI.python("Tests/Releases/release_flow.py", environment: [
                "KEYLIGHT_URL_A": "http://127.0.0.1:\(servers[0].port)", "KEYLIGHT_URL_B": "http://127.0.0.1:\(servers[1].port)",
                "KEYLIGHT_ADMIN_TOKEN": token, "KEYLIGHT_BIN": CLI.binary.path, "KEYLIGHT_ARTIFACTS_DIR": artifacts.path,
                "KEYLIGHT_SERVER_A_PID": String(servers[0].process.processIdentifier),
            ], limit: .seconds(180))
        } catch {
            for server in servers { _ = await server.terminate() }
            throw error
        }
        for server in servers { #expect(await server.terminate() == 0) }
        #expect(run.status == 0, "\(run.output)")
        for check in ["keylight release publish exited 0", "is informational: no enclosure", "edSignature verifies (pyca Ed25519)",
                      "answered 206 with those bytes", "401 LEASE_REQUIRED", "served by A on its token alone", "current=1.0.0 answers 204",
                      "was refused a license (403", "build 150 settled B's appcast (100 left it); yanked, it left after", "no artifact on the release",
                      "ok: release delivery holds across two processes"] {
            #expect(run.output.contains(check), "missing check \(check): \(run.output)")
        }
    }
}
