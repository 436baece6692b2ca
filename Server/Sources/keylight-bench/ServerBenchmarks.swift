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

    @Option(help: "Comma-separated phases to run: healthz, validate, telemetry, signed, activate, large, cpu, cpu-large (cpu on the large database), footprint.")
    var phases = "healthz,validate,telemetry,signed,activate,large,cpu"

    static let knownPhases: Set<String> = ["healthz", "validate", "telemetry", "signed", "activate", "large", "cpu", "cpu-large", "footprint"]

    private var selectedPhases: Set<String> { Set(phases.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) }

    /// A misspelt phase is an error, not a run that silently measures less than was asked.
    func validate() throws {
        guard !selectedPhases.isEmpty else { throw ValidationError("--phases names no phase") }
        let unknown = selectedPhases.subtracting(Self.knownPhases)
        guard unknown.isEmpty else {
            throw ValidationError("unknown phase(s): \(unknown.sorted().joined(separator: ", ")); known: \(Self.knownPhases.sorted().joined(separator: ", "))")
        }
        guard connections >= 1, seconds >= 1, licenses >= 1, rounds >= 1 else {
            throw ValidationError("--connections, --seconds, --licenses and --rounds must be at least 1")
        }
    }

    @Option(help: "Seconds of validate load on the large database before its memory is read (footprint phase).")
    var footprintSeconds = 60

    func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keylight-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let selected = selectedPhases
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
            try await telemetryComparison(small, wrk: wrk)
        }
        if selected.contains("signed") {
            try await signedComparison(small, wrk: wrk, directory: directory)
        }
        if selected.contains("large"), largeLicenses > licenses {
            try await databaseSizeComparison(small, wrk: wrk, directory: directory)
        }
        if selected.contains("cpu") {
            try await cpuPerRequest(small, wrk: wrk, totalLicenses: licenses)
        }
        if selected.contains("cpu-large"), largeLicenses > licenses {
            // The same legs with the license index `--large-licenses` deep (the same active ones).
            let large = try await BenchServer.start(name: "large", activeLicenses: licenses, totalLicenses: largeLicenses, poolSize: poolSize, directory: directory)
            defer { large.stop() }
            try await cpuPerRequest(large, wrk: wrk, totalLicenses: largeLicenses)
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

    func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }

    func emit(_ name: String, _ result: Wrk.Result, extra: [(String, String)]) {
        report(name, opsPerSecond: result.requestsPerSecond, extra: [
            ("p50_ms", String(format: "%.3f", result.p50ms)), ("p99_ms", String(format: "%.3f", result.p99ms)),
            ("requests", "\(result.requests)"), ("errors", "\(result.errors)"), ("non_2xx", "\(result.non2xx)"),
        ] + extra)
    }
}

