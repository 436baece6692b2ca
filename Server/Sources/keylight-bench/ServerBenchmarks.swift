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

    @Option(help: "Rounds of each alternating comparison (signed/unsigned, small/large database); medians are reported.")
    var rounds = 3

    @Option(help: "SQLite connection pool size.")
    var poolSize = ServerConfiguration().poolSize

    @Option(help: "Comma-separated phases to run: healthz, validate, telemetry, signed, activate, large, cpu, footprint.")
    var phases = "healthz,validate,telemetry,signed,activate,large,cpu"

    @Option(help: "Seconds of validate load on the large database before its memory is read (footprint phase).")
    var footprintSeconds = 60

    func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keylight-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let selected = Set(phases.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        let wrk = Wrk(connections: connections, seconds: seconds, directory: directory)

        let small = try await BenchServer.start(name: "small", activeLicenses: licenses, totalLicenses: licenses, poolSize: poolSize, directory: directory)
        defer { small.stop() }

        var health: Wrk.Result?
        if selected.contains("healthz") {
            health = try await wrk.run(url: small.base + "/healthz", script: WrkScripts.healthz, name: "healthz")
            emit("server.healthz", health!, extra: [("connections", "\(connections)")])
        }
        if selected.contains("validate") {
            let result = try await small.validate(with: wrk)
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
        if selected.contains("telemetry") {
            // Validate with and without the hosted clients' telemetry, alternately, so machine noise
            // hits both alike: what reading and recording it costs on the hottest path.
            var plain: [Wrk.Result] = []
            var withTelemetry: [Wrk.Result] = []
            for _ in 0..<rounds {
                plain.append(try await small.validate(with: wrk))
                withTelemetry.append(try await small.validate(with: wrk, script: WrkScripts.telemetryValidate))
            }
            let plainRate = median(plain.map(\.requestsPerSecond))
            let telemetryRate = median(withTelemetry.map(\.requestsPerSecond))
            print(#"{"benchmark":"server.validate_telemetry","rounds":\#(rounds),"plain_ops_per_sec":\#(String(format: "%.1f", plainRate)),"# +
                  #""telemetry_ops_per_sec":\#(String(format: "%.1f", telemetryRate)),"ratio":\#(String(format: "%.3f", telemetryRate / plainRate)),"# +
                  #""plain_p99_ms":\#(String(format: "%.3f", median(plain.map(\.p99ms)))),"telemetry_p99_ms":\#(String(format: "%.3f", median(withTelemetry.map(\.p99ms)))),"# +
                  #""errors":\#((plain + withTelemetry).map(\.errors).reduce(0, +)),"non_2xx":\#((plain + withTelemetry).map(\.non2xx).reduce(0, +))}"#)
        }
        if selected.contains("signed") {
            // Signed and unsigned validate alternately, so machine noise hits both alike. Both legs
            // look at every response: the unsigned one must carry no signature, the signed one a
            // signature on every response, and sampled signatures must verify.
            let nonce = BenchServer.nonce
            let samples = SignatureSamples(prefix: directory.appendingPathComponent("signed-sample"))
            var plain: [Wrk.Result] = []
            var signed: [Wrk.Result] = []
            for _ in 0..<rounds {
                plain.append(try await small.validate(with: wrk, script: WrkScripts.checkedValidate))
                signed.append(try await small.validate(with: wrk, script: WrkScripts.checkedValidate, nonce: nonce, samplePrefix: samples.prefix.path))
            }
            let signedInPlain = plain.map(\.signed).reduce(0, +)
            let unsignedInSigned = signed.map { $0.requests - $0.signed }.reduce(0, +)
            let (verified, failures) = try await samples.verify(base: small.base, tenant: "bench", path: "/bench/app/validate", nonce: nonce)
            if signedInPlain > 0 { wrk.ledger.record("signed: \(signedInPlain) responses without a nonce carried a signature") }
            if unsignedInSigned > 0 { wrk.ledger.record("signed: \(unsignedInSigned) responses with a nonce carried no signature") }
            if verified + failures.count == 0 { wrk.ledger.record("signed: no signature sample was written") }
            if !failures.isEmpty { wrk.ledger.record("signed: \(failures.count) sampled signatures failed to verify: \(failures.prefix(3))") }
            let plainRate = median(plain.map(\.requestsPerSecond))
            let signedRate = median(signed.map(\.requestsPerSecond))
            let ratio = signedRate / plainRate
            print(#"{"benchmark":"server.validate_signed","rounds":\#(rounds),"unsigned_ops_per_sec":\#(String(format: "%.1f", plainRate)),"signed_ops_per_sec":\#(String(format: "%.1f", signedRate)),"# +
                  #""signed_p99_ms":\#(String(format: "%.3f", median(signed.map(\.p99ms)))),"ratio":\#(String(format: "%.3f", ratio)),"target":0.8,"meets_target":\#(ratio >= 0.8),"# +
                  #""signed_responses":\#(signed.map(\.signed).reduce(0, +)),"unsigned_responses":\#(unsignedInSigned),"samples_verified":\#(verified),"samples_failed":\#(failures.count),"# +
                  #""errors":\#((plain + signed).map(\.errors).reduce(0, +)),"non_2xx":\#((plain + signed).map(\.non2xx).reduce(0, +))}"#)
        }
        if selected.contains("large"), largeLicenses > licenses {
            // Same active licenses and instances, one database holding `largeLicenses` in all.
            // Measured alternately with the small one, so machine noise hits both alike.
            let large = try await BenchServer.start(name: "large", activeLicenses: licenses, totalLicenses: largeLicenses, poolSize: poolSize, directory: directory)
            defer { large.stop() }
            // The filler import alone: not the server's start-up, nor seeding the active licenses.
            let imported = largeLicenses - licenses
            let importSeconds = large.importDuration?.seconds ?? 0
            print(#"{"benchmark":"server.import","licenses":\#(imported),"seconds":\#(String(format: "%.2f", importSeconds)),"licenses_per_sec":\#(String(format: "%.0f", Double(imported) / max(importSeconds, 1e-9)))}"#)
            let warmUp = Wrk(connections: connections, seconds: 2, directory: directory)
            _ = try await small.validate(with: warmUp)
            _ = try await large.validate(with: warmUp)
            var smallRuns: [Wrk.Result] = []
            var largeRuns: [Wrk.Result] = []
            for _ in 0..<rounds {
                smallRuns.append(try await small.validate(with: wrk))
                largeRuns.append(try await large.validate(with: wrk))
            }
            let smallP50 = median(smallRuns.map(\.p50ms))
            let largeP50 = median(largeRuns.map(\.p50ms))
            let ratio = largeP50 / smallP50
            print(#"{"benchmark":"server.validate_by_database_size","rounds":\#(rounds),"small_licenses":\#(licenses),"large_licenses":\#(largeLicenses),"# +
                  #""small_p50_ms":\#(String(format: "%.3f", smallP50)),"large_p50_ms":\#(String(format: "%.3f", largeP50)),"# +
                  #""small_ops_per_sec":\#(String(format: "%.1f", median(smallRuns.map(\.requestsPerSecond)))),"large_ops_per_sec":\#(String(format: "%.1f", median(largeRuns.map(\.requestsPerSecond)))),"# +
                  #""p50_ratio":\#(String(format: "%.3f", ratio)),"target":"large p50 <= 1.2 x small p50","meets_target":\#(ratio <= 1.2)}"#)
        }
        if selected.contains("cpu") {
            try await cpuPerRequest(small, wrk: wrk)
        }
        if selected.contains("footprint") {
            try await footprint(small: small, directory: directory, wrk: wrk)
        }
        if selected.contains("activate") {
            let activate = try await wrk.run(url: small.base + "/bench/app/activate", script: WrkScripts.activate, name: "activate", arguments: [small.pairsFile.path, small.sdkKey])
            emit("server.activate", activate, extra: health.map { [("ratio_to_healthz", String(format: "%.3f", activate.requestsPerSecond / $0.requestsPerSecond))] } ?? [])
        }
        try wrk.ledger.check("server")
    }

    /// The server's CPU time per answered request for `/healthz`, validate, signed validate and
    /// activate, in alternating rounds (machine noise hits every leg alike). CPU per request does
    /// not depend on wrk sharing the cores, so it compares the legs where requests/s cannot.
    private func cpuPerRequest(_ server: BenchServer, wrk: Wrk) async throws {
        let legs: [(name: String, run: () async throws -> Wrk.Result)] = [
            ("healthz", { try await wrk.run(url: server.base + "/healthz", script: WrkScripts.healthz, name: "healthz") }),
            ("validate", { try await server.validate(with: wrk) }),
            ("signed", { try await server.validate(with: wrk, nonce: BenchServer.nonce) }),
            ("activate", { try await wrk.run(url: server.base + "/bench/app/activate", script: WrkScripts.activate, name: "activate", arguments: [server.pairsFile.path, server.sdkKey]) }),
        ]
        var perRequest: [String: [Double]] = [:]
        var results: [String: [Wrk.Result]] = [:]
        for _ in 0..<rounds {
            for leg in legs {
                let (result, cpu) = try await ProcessCPU.measure(leg.run)
                guard let cpu else { throw BenchError("cpu: /proc/self/stat is not readable here") }
                let answered = max(1, result.requests - result.non2xx)
                perRequest[leg.name, default: []].append(cpu / Double(answered) * 1e6)
                results[leg.name, default: []].append(result)
            }
        }
        let healthz = median(perRequest["healthz"] ?? [])
        func leg(_ name: String) -> String {
            let runs = results[name] ?? []
            let microseconds = median(perRequest[name] ?? [])
            return #""\#(name)_cpu_us":\#(String(format: "%.1f", microseconds)),"\#(name)_ratio":\#(String(format: "%.2f", microseconds / healthz)),"# +
                #""\#(name)_ops_per_sec":\#(String(format: "%.1f", median(runs.map(\.requestsPerSecond)))),"\#(name)_p99_ms":\#(String(format: "%.3f", median(runs.map(\.p99ms)))),"# +
                #""\#(name)_errors":\#(runs.map(\.errors).reduce(0, +)),"\#(name)_non_2xx":\#(runs.map(\.non2xx).reduce(0, +))"#
        }
        // Latency where a server runs in production, below saturation: validate offered at half
        // the rate the rounds above reached, paced per connection.
        let saturation = median((results["validate"] ?? []).map(\.requestsPerSecond))
        // wrk's delay is whole milliseconds per connection.
        let pace = max(1, Int((Double(connections) * 1000 / max(1, saturation / 2)).rounded()))
        let offered = Double(connections) * 1000 / Double(pace)
        let paced = try await server.validate(with: wrk, script: WrkScripts.pacedValidate, pace: "\(pace)")
        print(#"{"benchmark":"server.validate_paced","saturation_ops_per_sec":\#(String(format: "%.1f", saturation)),"offered_ops_per_sec":\#(String(format: "%.1f", offered)),"ops_per_sec":\#(String(format: "%.1f", paced.requestsPerSecond)),"# +
              #""p50_ms":\#(String(format: "%.3f", paced.p50ms)),"p99_ms":\#(String(format: "%.3f", paced.p99ms)),"errors":\#(paced.errors),"non_2xx":\#(paced.non2xx),"# +
              #""target":"p99 < 10 ms at half of saturation","meets_target":\#(paced.p99ms < 10 && paced.failures == 0)}"#)
        let validateRatio = median(perRequest["validate"] ?? []) / healthz
        let activateRatio = median(perRequest["activate"] ?? []) / healthz
        print(#"{"benchmark":"server.cpu_per_request","rounds":\#(rounds),"healthz_cpu_us":\#(String(format: "%.1f", healthz)),"# +
              [leg("validate"), leg("signed"), leg("activate")].joined(separator: ",") +
              #","target":"validate <= 2.0 x healthz, activate <= 4.0 x healthz (CPU per request)","meets_target":\#(validateRatio <= 2.0 && activateRatio <= 4.0)}"#)
    }

    /// The process's memory after sustained validate load on a database of `--large-licenses`
    /// licenses. The server runs in this process, beside the small one the other phases use, so
    /// the small server's share is read first and reported too.
    private func footprint(small: BenchServer, directory: URL, wrk: Wrk) async throws {
        let before = ProcessMemory.read()
        let large = try await BenchServer.start(name: "footprint", activeLicenses: licenses, totalLicenses: largeLicenses, poolSize: poolSize, directory: directory)
        defer { large.stop() }
        let loaded = ProcessMemory.read()
        let sustained = Wrk(connections: connections, seconds: footprintSeconds, directory: directory, ledger: wrk.ledger)
        let result = try await large.validate(with: sustained)
        let after = ProcessMemory.read()
        print(#"{"benchmark":"server.footprint","licenses":\#(largeLicenses),"seconds":\#(footprintSeconds),"# +
              #""rss_mib_before":\#(before.rssMiB),"rss_mib_after_import":\#(loaded.rssMiB),"rss_mib_after_load":\#(after.rssMiB),"peak_rss_mib":\#(after.peakMiB),"# +
              #""ops_per_sec":\#(String(format: "%.1f", result.requestsPerSecond)),"p99_ms":\#(String(format: "%.3f", result.p99ms)),"errors":\#(result.errors),"non_2xx":\#(result.non2xx)}"#)
    }

    private func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }

    private func emit(_ name: String, _ result: Wrk.Result, extra: [(String, String)]) {
        report(name, opsPerSecond: result.requestsPerSecond, extra: [
            ("p50_ms", String(format: "%.3f", result.p50ms)), ("p99_ms", String(format: "%.3f", result.p99ms)),
            ("requests", "\(result.requests)"), ("errors", "\(result.errors)"), ("non_2xx", "\(result.non2xx)"),
        ] + extra)
    }
}

/// One in-process server on its own SQLite file with `activeLicenses` licenses that each have one
/// active instance (the validate workload) and filler licenses up to `totalLicenses`.
struct BenchServer: Sendable {
    let base: String
    let sdkKey: String
    let pairsFile: URL
    let task: Task<Void, any Error>
    let database: Database
    /// How long importing the filler licenses took (nil when there were none).
    var importDuration: Duration?

    static func start(name: String, activeLicenses: Int, totalLicenses: Int, poolSize: Int, directory: URL) async throws -> BenchServer {
        var logger = Logger(label: "keylight-bench")
        logger.logLevel = .critical
        var configuration = ServerConfiguration()
        configuration.databasePath = directory.appendingPathComponent("\(name).sqlite").path
        configuration.port = 0
        configuration.adminToken = "bench-token"
        configuration.limits = .unlimited
        configuration.poolSize = poolSize
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let server = try await buildApplication(configuration: configuration, logger: logger) { channel in
            portContinuation.yield(channel.localAddress?.port ?? 0)
            portContinuation.finish()
        }
        // The stream ends with run(), so a server that fails before listening ends the wait.
        let task = Task {
            defer { portContinuation.finish() }
            try await server.application.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            _ = try await task.value
            throw BenchError("server did not start")
        }
        let base = "http://127.0.0.1:\(port)"
        let seeded = try await Seeder.seed(base: base, licenses: activeLicenses, database: server.database, directory: directory, name: name)
        var importDuration: Duration?
        if totalLicenses > activeLicenses {
            let clock = ContinuousClock()
            let start = clock.now
            try await importFiller(count: totalLicenses - activeLicenses, into: server.database)
            importDuration = clock.now - start
        }
        return BenchServer(base: base, sdkKey: seeded.sdkKey, pairsFile: seeded.pairs, task: task, database: server.database, importDuration: importDuration)
    }

    /// The `X-Keylight-Nonce` of signed runs (base64 of 12 bytes).
    static let nonce = "AAECAwQFBgcICQoL"

    /// One wrk run of validate; with a nonce every response is signed (protocol section 3).
    func validate(with wrk: Wrk, script: String = WrkScripts.validate, nonce: String = "", samplePrefix: String = "", pace: String = "") async throws -> Wrk.Result {
        try await wrk.run(url: base + "/bench/app/validate", script: script, name: nonce.isEmpty ? "validate" : "signed", arguments: [pairsFile.path, sdkKey, nonce, samplePrefix, pace])
    }

    func stop() {
        task.cancel()
    }

    /// `count` more licenses (never activated), imported in batches, then the database tidied.
    private static func importFiller(count: Int, into database: Database) async throws {
        let now = Int64(Date().timeIntervalSince1970)
        var remaining = count
        while remaining > 0 {
            let size = min(remaining, 20_000)
            let batch = try (0..<size).map { _ in
                let key = try LicenseKey.generate(prefix: "BNCH")
                return License(
                    id: UUID().uuidString.lowercased(), tenantId: "bench", productId: "app", keyTypeId: "pro", keyHash: key.keyHash,
                    maskedKey: key.masked, status: .active, expiresAt: nil, customerEmail: nil, activeInstances: 0, createdAt: now, updatedAt: now
                )
            }
            remaining -= size
            try await database.importLicenses(batch, tidy: remaining == 0)
        }
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
