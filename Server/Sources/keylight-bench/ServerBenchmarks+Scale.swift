import Foundation
import KeylightServer

/// Issue 52's target at scale: validate with `--scale-instances` active instances costs at most
/// 1.2× what it costs with `--licenses`.
extension ServerBenchmarks {
    /// A server with `--licenses` licenses and one whose `--scale-instances` licenses each have an
    /// active instance that was
    /// activated and validated once while seeding (so the load is each device's next validate
    /// of the day, as on a server whose devices all checked in within the last day), then
    /// validate on the small server and on it in alternated rounds of one run. Both gather
    /// validation times as a server does by default (`ValidationTimesSchedule`: about 30 s, at
    /// most 250,000), and each leg ends by writing what its load left buffered, so every write the
    /// load caused is counted in it; legs as long as a gathering (`--seconds 30`) measure what it
    /// saves. The ending write's CPU is reported apart, and is a lower bound of the writes' share:
    /// a leg that reaches the cap writes most of its times in a periodic flush during its load.
    /// Both servers live in this process and share its event loops, so machine noise hits both
    /// legs alike; the ratio is of server CPU per answered request. With 1,000,000 instances the
    /// seeding takes about 19 minutes on the 2-core development machine.
    func validateAtScale(wrk: Wrk, pinning: CPUPinning, directory: URL) async throws {
        let gathering = ValidationTimesSchedule()
        let small = try await BenchServer.start(
            name: "scale-small", activeLicenses: licenses, totalLicenses: licenses, poolSize: poolSize, directory: directory, validationTimes: gathering
        )
        defer { small.stop() }
        let clock = ContinuousClock()
        let start = clock.now
        let kept = scaleDirectory.map { URL(fileURLWithPath: $0, isDirectory: true) }
        if let kept { try FileManager.default.createDirectory(at: kept, withIntermediateDirectories: true) }
        let scale = try await BenchServer.start(
            name: "scale", activeLicenses: scaleInstances, totalLicenses: scaleInstances, poolSize: poolSize, directory: kept ?? directory,
            validationTimes: gathering, reuse: kept != nil
        )
        defer { scale.stop() }
        let seeding = (clock.now - start).seconds
        // The seeding's own gathered validation times are not the first leg's.
        await scale.server.writeBufferedActivity()
        await small.server.writeBufferedActivity()
        let activity = LegActivity()
        // Each leg's load, then what it left buffered written inside its measurement: its writes
        // are its own, not the next leg's or nobody's.
        func leg(_ name: String, _ server: BenchServer) -> (name: String, run: () async throws -> Wrk.Result) {
            (name, {
                try await activity.measure(name) {
                    // For matching a profile (`perf record -k mono`) to the legs.
                    FileHandle.standardError.write(Data("leg \(name) starts at \(Self.monotonicSeconds()) s\n".utf8))
                    let result = try await server.validate(with: wrk)
                    let (_, cpu) = await ProcessCPU.measure { await server.server.writeBufferedActivity() }
                    if let cpu {
                        await activity.addEndingWrite(name, microsecondsPerRequest: cpu * 1e6 / Double(max(1, result.requests - result.non2xx)))
                    }
                    return result
                }
            })
        }
        let (perRequest, results) = try await alternatedRounds([leg("small", small), leg("scale", scale)])
        let smallCPU = median(perRequest["small"] ?? [])
        let scaleCPU = median(perRequest["scale"] ?? [])
        let ratio = scaleCPU / max(smallCPU, 1e-9)
        let runs = (results["small"] ?? []) + (results["scale"] ?? [])
        let failures = runs.map { $0.errors + $0.non2xx }.reduce(0, +)
        if failures > 0 { wrk.ledger.record("scale: \(failures) errors or non-2xx answers") }
        func list(_ values: [Double]) -> String { "[" + values.map { String(format: "%.1f", $0) }.joined(separator: ",") + "]" }
        let counted = await activity.perRequest
        let endingWrites = await activity.endingWrite
        func endingWrite(_ leg: String) -> String {
            guard let values = endingWrites[leg], !values.isEmpty else { return "null" }
            return String(format: "%.1f", median(values))
        }
        func activityMedian(_ leg: String, _ counter: KeyPath<ProcessActivity, Double>) -> String {
            guard let values = counted[leg], !values.isEmpty else { return "null" }
            return String(format: "%.2f", median(values.map { $0[keyPath: counter] }))
        }
        printJSONLine("server.validate_at_scale", [
            ("pinned", "\(pinning.isPinned)"), ("rounds", "\(rounds)"), ("seconds", "\(seconds)"),
            ("small_instances", "\(licenses)"), ("scale_instances", "\(scaleInstances)"), ("seeding_seconds", String(format: "%.1f", seeding)),
            ("seeded_earlier", "\(scale.reused)"),
            ("small_cpu_us", String(format: "%.1f", smallCPU)), ("scale_cpu_us", String(format: "%.1f", scaleCPU)),
            ("cpu_ratio", String(format: "%.3f", ratio)),
            ("small_cpu_us_rounds", list(perRequest["small"] ?? [])), ("scale_cpu_us_rounds", list(perRequest["scale"] ?? [])),
            ("small_ops_per_sec", String(format: "%.1f", median((results["small"] ?? []).map(\.requestsPerSecond)))),
            ("scale_ops_per_sec", String(format: "%.1f", median((results["scale"] ?? []).map(\.requestsPerSecond)))),
            ("small_p99_ms", String(format: "%.3f", median((results["small"] ?? []).map(\.p99ms)))),
            ("scale_p99_ms", String(format: "%.3f", median((results["scale"] ?? []).map(\.p99ms)))),
            ("small_minor_faults_per_request", activityMedian("small", \.minorFaults)), ("scale_minor_faults_per_request", activityMedian("scale", \.minorFaults)),
            ("small_written_bytes_per_request", activityMedian("small", \.writtenBytes)), ("scale_written_bytes_per_request", activityMedian("scale", \.writtenBytes)),
            ("small_write_calls_per_request", activityMedian("small", \.writeCalls)), ("scale_write_calls_per_request", activityMedian("scale", \.writeCalls)),
            ("small_read_calls_per_request", activityMedian("small", \.readCalls)), ("scale_read_calls_per_request", activityMedian("scale", \.readCalls)),
            ("small_major_faults_per_request", activityMedian("small", \.majorFaults)), ("scale_major_faults_per_request", activityMedian("scale", \.majorFaults)),
            ("small_storage_read_bytes_per_request", activityMedian("small", \.storageReadBytes)),
            ("scale_storage_read_bytes_per_request", activityMedian("scale", \.storageReadBytes)),
            ("small_ending_write_cpu_us_per_request", endingWrite("small")), ("scale_ending_write_cpu_us_per_request", endingWrite("scale")),
            ("errors", "\(runs.map(\.errors).reduce(0, +))"), ("non_2xx", "\(runs.map(\.non2xx).reduce(0, +))"),
            ("target", #""scale validate CPU <= 1.2 x small, 0 errors""#), ("meets_target", "\(ratio <= 1.2 && failures == 0)"),
        ])
    }

    private static func monotonicSeconds() -> String {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return String(format: "%.3f", Double(now.tv_sec) + Double(now.tv_nsec) / 1e9)
    }
}
