import ArgumentParser
import AsyncHTTPClient
import Foundation
import KeylightCore
import KeylightServer
import Logging
import NIOCore

/// The license server under load from wrk on loopback: `/healthz` as the framework's ceiling,
/// then validate and activate with the same connections, then validate again after growing the
/// database from `--licenses` to `--large-licenses` licenses.
struct ServerBenchmarks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "server", abstract: "License server throughput and latency (needs wrk).")

    @Option(help: "Seconds per wrk run.")
    var seconds = 10

    @Option(help: "Concurrent connections.")
    var connections = 64

    @Option(help: "Licenses (each with one active instance) that validate cycles through.")
    var licenses = 1_000

    @Option(help: "Total licenses for the large-database validate run (0 skips it).")
    var largeLicenses = 1_000_000

    @Option(help: "SQLite connection pool size.")
    var poolSize = ServerConfiguration().poolSize

    @Option(help: "Comma-separated phases to run: healthz, validate, activate, large.")
    var phases = "healthz,validate,activate,large"

    func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keylight-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        var logger = Logger(label: "keylight-bench")
        logger.logLevel = .critical
        var configuration = ServerConfiguration()
        configuration.databasePath = directory.appendingPathComponent("bench.sqlite").path
        configuration.port = 0
        configuration.adminToken = "bench-token"
        configuration.limits = .unlimited
        configuration.poolSize = poolSize
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let server = try await buildApplication(configuration: configuration, logger: logger) { channel in
            portContinuation.yield(channel.localAddress?.port ?? 0)
            portContinuation.finish()
        }
        let running = Task { try await server.application.run() }
        defer { running.cancel() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw BenchError("server did not start") }
        let base = "http://127.0.0.1:\(port)"
        let http = HTTPClient.shared
        let admin = AdminClient(base: base, token: "bench-token", http: http)

        // Catalogue through the admin API; licenses by bulk import, each activated once over HTTP.
        _ = try await admin.post("/admin/v1/tenants", #"{"id":"bench","name":"Bench"}"#)
        let product = try await admin.post("/admin/v1/tenants/bench/products", #"{"id":"app","name":"App","key_prefix":"BNCH","trial_duration_days":14,"free_tier_enabled":true}"#)
        guard let sdkKey = product["sdk_key"] as? String else { throw BenchError("no sdk key: \(product)") }
        _ = try await admin.post("/admin/v1/tenants/bench/products/app/key-types", #"{"id":"pro","display_name":"Pro","activation_limit":100000,"duration_days":null,"fallback_access":true,"entitlements":["pro"]}"#)
        let keys = try await importLicenses(count: licenses, into: server.database)
        var pairs: [String] = []
        try await withThrowingTaskGroup(of: String.self) { group in
            for (index, key) in keys.enumerated() {
                if index >= 32 { pairs.append(try await group.next()!) }
                group.addTask {
                    let reply = try await admin.post("/bench/app/activate", #"{"license_key":"\#(key.text)","instance_name":"seed","machine_hash":"seed-\#(index)"}"#, sdkKey: sdkKey)
                    guard let instance = reply["instance_id"] as? String else { throw BenchError("activation failed: \(reply)") }
                    return "\(key.text) \(instance)"
                }
            }
            for try await pair in group { pairs.append(pair) }
        }
        let pairsFile = directory.appendingPathComponent("pairs.txt")
        try Data((pairs.joined(separator: "\n") + "\n").utf8).write(to: pairsFile)

        let selected = Set(phases.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        let wrk = Wrk(connections: connections, seconds: seconds, directory: directory)
        var health: Wrk.Result?
        if selected.contains("healthz") {
            health = try wrk.run(url: base + "/healthz", script: WrkScripts.healthz, name: "healthz")
            emit("server.healthz", health!, extra: [("connections", "\(connections)")])
        }
        var validate: Wrk.Result?
        if selected.contains("validate") {
            let result = try wrk.run(url: base + "/bench/app/validate", script: WrkScripts.validate, name: "validate", arguments: [pairsFile.path, sdkKey])
            validate = result
            var extra = [("licenses", "\(licenses)")]
            if let health {
                let ratio = result.requestsPerSecond / health.requestsPerSecond
                extra += [
                    ("ratio_to_healthz", String(format: "%.3f", ratio)),
                    ("target", #""rps >= 0.5 x healthz, p99 < 10 ms""#), ("meets_target", "\(ratio >= 0.5 && result.p99ms < 10)"),
                ]
            }
            emit("server.validate", result, extra: extra)
        }
        if selected.contains("activate") {
            let activate = try wrk.run(url: base + "/bench/app/activate", script: WrkScripts.activate, name: "activate", arguments: [pairsFile.path, sdkKey])
            emit("server.activate", activate, extra: health.map { [("ratio_to_healthz", String(format: "%.3f", activate.requestsPerSecond / $0.requestsPerSecond))] } ?? [])
        }

        guard selected.contains("large"), largeLicenses > licenses, let validate else { return }
        let importStart = ContinuousClock.now
        _ = try await importLicenses(count: largeLicenses - licenses, into: server.database)
        let importSeconds = (ContinuousClock.now - importStart).seconds
        print(#"{"benchmark":"server.import","licenses":\#(largeLicenses - licenses),"seconds":\#(String(format: "%.1f", importSeconds))}"#)
        let large = try wrk.run(url: base + "/bench/app/validate", script: WrkScripts.validate, name: "validate-large", arguments: [pairsFile.path, sdkKey])
        let p50Ratio = large.p50ms / validate.p50ms
        emit("server.validate", large, extra: [
            ("licenses", "\(largeLicenses)"), ("p50_ratio_to_\(licenses)", String(format: "%.3f", p50Ratio)),
            ("target", #""p50 within 1.2x of the small database""#), ("meets_target", "\(p50Ratio <= 1.2)"),
        ])
    }

    /// Random keys imported straight into the database, in batches.
    private func importLicenses(count: Int, into database: Database) async throws -> [LicenseKey] {
        var keys: [LicenseKey] = []
        keys.reserveCapacity(min(count, 10_000))
        let now = Int64(Date().timeIntervalSince1970)
        var remaining = count
        while remaining > 0 {
            let size = min(remaining, 20_000)
            var batch: [License] = []
            batch.reserveCapacity(size)
            for _ in 0..<size {
                let key = try LicenseKey.generate(prefix: "BNCH")
                if keys.count < 10_000 { keys.append(key) }
                batch.append(License(
                    id: UUID().uuidString.lowercased(), tenantId: "bench", productId: "app", keyTypeId: "pro", keyHash: key.keyHash,
                    maskedKey: key.masked, status: .active, expiresAt: nil, customerEmail: nil, activeInstances: 0, createdAt: now, updatedAt: now
                ))
            }
            try await database.importLicenses(batch)
            remaining -= size
        }
        return Array(keys.prefix(count))
    }

    private func emit(_ name: String, _ result: Wrk.Result, extra: [(String, String)]) {
        report(name, opsPerSecond: result.requestsPerSecond, extra: [
            ("p50_ms", String(format: "%.3f", result.p50ms)), ("p99_ms", String(format: "%.3f", result.p99ms)),
            ("requests", "\(result.requests)"), ("errors", "\(result.errors)"), ("non_2xx", "\(result.non2xx)"),
        ] + extra)
    }
}

/// A few JSON calls for seeding.
struct AdminClient: Sendable {
    let base: String
    let token: String
    let http: HTTPClient

    func post(_ path: String, _ json: String, sdkKey: String? = nil) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: base + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        if let sdkKey { request.headers.add(name: "X-Keylight-SDK-Key", value: sdkKey) } else { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        request.body = .bytes(ByteBuffer(string: json))
        let response = try await http.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any] ?? [:]
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
