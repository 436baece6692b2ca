import ArgumentParser
import Crypto
import Foundation
import Keylight
import KeylightCore
import KeylightSigning

/// `checkOnLaunch` with a cached lease and no network, on the production Linux store (one
/// encrypted file read, decrypt, decode, one lease verify), against one raw Ed25519 verify timed
/// right after each launch (and, for comparison, in a tight loop of verifies).
struct SDKBenchmarks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sdk", abstract: "LicenseManager launch cost (KeylightSDK).")

    @Option(help: "Launches to time.")
    var iterations = 2_000

    @MainActor
    func run() async throws {
        let key = try SigningKey.generate(kid: "k1")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keylight-bench-sdk-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = EncryptedFileStore(directory: directory)
        func configuration(_ transport: any Transport) -> Configuration {
            Configuration(
                serverURL: URL(string: "https://licenses.invalid")!, tenantId: "bench", productId: "app", sdkKey: "kl_sdk_bench",
                keyPrefix: "BNCH", trustedKeys: [key.kid: key.publicKey], instanceName: "bench", store: store, transport: transport
            )
        }
        let licenseKey = try LicenseKey.generate(prefix: "BNCH")
        let setup = LicenseManager(configuration: configuration(SigningTransport(key: key)))
        await setup.checkOnLaunch()
        try await setup.activate(key: licenseKey.text)
        guard setup.state == .licensed else { throw BenchError("setup did not license: \(setup.state)") }

        // The app's configuration is made once at start-up (its two Info.plist reads included),
        // before the launch is timed: a launch is the manager reading its state and deciding.
        let launchConfiguration = configuration(OfflineTransport())
        // One raw Ed25519 verify of a lease payload, timed the same way.
        let lease = try Lease.sign(licenseKeyHash: licenseKey.keyHash, instanceId: "i", issuedAt: 1, expiresAt: 2, status: .active, entitlements: ["pro"], with: key)
        let payload = lease.signedPayload
        let signature = Base64.decode(lease.signature)!
        let clock = ContinuousClock()
        func verifyOnce() -> Double {
            let start = clock.now
            blackHole(key.publicKey.isValidSignature(signature, for: payload))
            return (clock.now - start).seconds
        }

        var launches: [Double] = []
        // A raw verify after each launch, under the same cache conditions as the launch's own.
        var interleaved: [Double] = []
        launches.reserveCapacity(iterations)
        for _ in 0..<iterations {
            let start = clock.now
            let manager = LicenseManager(configuration: launchConfiguration)
            await manager.checkOnLaunch()
            let elapsed = clock.now - start
            guard manager.state == .licensed else { throw BenchError("launch did not license: \(manager.state)") }
            launches.append(elapsed.seconds)
            interleaved.append(verifyOnce())
        }
        // And in a tight loop of verifies only (warmest caches: the hardest comparison).
        let tight = (0..<iterations).map { _ in verifyOnce() }
        let launch = launches.sorted()[launches.count / 2]
        let verify = interleaved.sorted()[interleaved.count / 2]
        let tightVerify = tight.sorted()[tight.count / 2]
        print(#"{"benchmark":"sdk.check_on_launch","median_us":\#(String(format: "%.1f", launch * 1e6)),"raw_ed25519_verify_median_us":\#(String(format: "%.1f", verify * 1e6)),"ratio_to_raw_verify":\#(String(format: "%.3f", launch / verify)),"# +
              #""tight_loop_verify_median_us":\#(String(format: "%.1f", tightVerify * 1e6)),"ratio_to_tight_loop_verify":\#(String(format: "%.3f", launch / tightVerify)),"# +
              #""target":1.6,"meets_target":\#(launch / verify <= 1.6),"iterations":\#(iterations)}"#)
    }
}

/// Answers activate like a server: a lease signed by `key`.
struct SigningTransport: Transport {
    let key: SigningKey

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let fields = request.body.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: String] } ?? [:]
        guard request.path.hasSuffix("/activate"), let licenseKey = fields["license_key"] else { throw URLError(.notConnectedToInternet) }
        let now = SystemWallClock().unixSeconds
        let lease = try Lease.sign(licenseKeyHash: LicenseKey.hash(normalizing: licenseKey), instanceId: "bench-instance", issuedAt: now,
                                   expiresAt: now + 7 * 86_400, status: .active, entitlements: ["pro"], with: key)
        let body = #"{"activated":true,"instance_id":"bench-instance","license_expires_at":null,"lease":\#(String(decoding: lease.json(), as: UTF8.self))}"#
        return TransportResponse(status: 200, body: Data(body.utf8))
    }
}

/// No network at all.
struct OfflineTransport: Transport {
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        throw URLError(.notConnectedToInternet)
    }
}
