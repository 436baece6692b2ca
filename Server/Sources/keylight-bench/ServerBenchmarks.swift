import ArgumentParser
import AsyncHTTPClient
import Foundation
import KeylightCore
import KeylightServer
import Logging
import NIOCore

/// The license server under load from wrk on loopback: `/healthz` as the framework's ceiling,
/// then validate and activate with the same connections, then validate again after growing the
/// database from `--licenses` to `--large-licenses` licenses. With at least two CPUs the server
/// (this process) runs on one and wrk on another (``CPUPinning``; `--no-pin` shares them).
struct ServerBenchmarks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "server", abstract: "License server throughput and latency (needs wrk).")

    @Option(help: "Seconds per wrk run.")
    var seconds = 10

    @Option(help: "Concurrent connections (default: 32 pinned, with one wrk thread; 64 and two threads with --no-pin).")
    var connections: Int?

    @Flag(help: "Leave the server and wrk to the scheduler, as before issue 52, instead of pinning this process (the server) to one CPU and wrk and the paced client to another.")
    var noPin = false

    @Option(help: "Licenses (each with one active instance) that validate cycles through.")
    var licenses = 1_000

    @Option(help: "Total licenses for the large-database validate run (0 skips it).")
    var largeLicenses = 1_000_000

    @Option(help: "Rounds of each alternating comparison (signed/unsigned, small/large database); medians are reported.")
    var rounds = 3

    @Option(help: "SQLite connection pool size.")
    var poolSize = ServerConfiguration().poolSize

    @Option(help: "Active instances of the scale phase's second server, each activated and validated once before the load.")
    var scaleInstances = 1_000_000

    @Option(help: "A directory for the scale phase's large server, kept after the run: seeded the first time (about 19 minutes for a million), started on what is there by later runs.")
    var scaleDirectory: String?

    @Option(help: "Comma-separated phases to run: healthz, validate, ratios, open-loop, floor, telemetry, signed, activate, large, cpu, cpu-large (cpu on the large database), footprint, scale (validate on --scale-instances active instances against --licenses, alternated; not run by default: a million take about 19 minutes to seed).")
    var phases = "healthz,validate,ratios,open-loop,floor,telemetry,signed,activate,large,cpu"

    static let knownPhases: Set<String> = [
        "healthz", "validate", "ratios", "open-loop", "floor", "telemetry", "signed", "activate", "large", "cpu", "cpu-large", "footprint", "scale",
    ]

    @Option(help: "Requests/s the open-loop phase offers (default: half of validate's requests/s in the ratios phase of the same run).")
    var pacedRate: Double?

    @Option(help: "Seconds of the open-loop phase, after one second not counted (default: --seconds).")
    var pacedSeconds: Int?

    @Option(help: "A CSV file for every counted request of the open-loop phase: when it was due (s), its latency and the client's lateness (µs), its status.")
    var openLoopLatencies: String?

    @Option(help: "Seconds per round of each part the floor phase times (signature, license read, answer JSON).")
    var floorSeconds = 1.0

    private var selectedPhases: Set<String> { Set(phases.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) }

    /// A misspelt phase is an error, not a run that silently measures less than was asked.
    func validate() throws {
        guard !selectedPhases.isEmpty else { throw ValidationError("--phases names no phase") }
        let unknown = selectedPhases.subtracting(Self.knownPhases)
        guard unknown.isEmpty else {
            throw ValidationError("unknown phase(s): \(unknown.sorted().joined(separator: ", ")); known: \(Self.knownPhases.sorted().joined(separator: ", "))")
        }
        guard (connections ?? 1) >= 1, seconds >= 1, licenses >= 1, rounds >= 1, (pacedSeconds ?? 1) >= 1 else {
            throw ValidationError("--connections, --seconds, --licenses, --rounds and --paced-seconds must be at least 1")
        }
        guard scaleInstances >= 1 else { throw ValidationError("--scale-instances must be at least 1") }
        guard (pacedRate ?? 1) > 0, floorSeconds > 0 else { throw ValidationError("--paced-rate and --floor-seconds must be above 0") }
    }

    @Option(help: "Seconds of validate load on the large database before its memory is read (footprint phase).")
    var footprintSeconds = 60

    func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keylight-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let selected = selectedPhases
        let pinning = try await CPUPinning.pinThisProcess(requested: !noPin)
        let wrk = Wrk(
            threads: pinning.isPinned ? 1 : 2, connections: connections ?? (pinning.isPinned ? 32 : 64), seconds: seconds, directory: directory,
            cpu: pinning.clientCPU
        )

        let small = try await BenchServer.start(name: "small", activeLicenses: licenses, totalLicenses: licenses, poolSize: poolSize, directory: directory)
        defer { small.stop() }

        var health: Wrk.Result?
        if selected.contains("healthz") {
            health = try await wrk.run(url: small.base + "/healthz", script: WrkScripts.healthz, name: "healthz")
            emit("server.healthz", health!, extra: [("connections", "\(wrk.connections)"), ("pinned", "\(pinning.isPinned)")])
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
        // Issue 52's figures: both ratios from alternated rounds, validate's p99 from a client
        // that keeps to a schedule, and validate's cost beyond /healthz against its floor.
        var ratios: Ratios?
        if selected.contains("ratios") || selected.contains("floor") || (selected.contains("open-loop") && pacedRate == nil) {
            ratios = try await healthzValidateRatios(small, wrk: wrk, pinning: pinning)
        }
        if selected.contains("open-loop") {
            try await openLoop(small, wrk: wrk, pinning: pinning, saturation: ratios?.validateRate)
        }
        if selected.contains("floor"), let ratios {
            try await validateFloor(small, ratios: ratios)
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
        if selected.contains("scale") {
            try await validateAtScale(wrk: wrk, pinning: pinning, directory: directory)
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

