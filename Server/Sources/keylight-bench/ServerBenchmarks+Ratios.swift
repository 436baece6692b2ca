import Foundation

/// Issue 52's figures that hold on a shared 2-core machine: validate against `/healthz` in
/// alternated rounds, and validate's latency from a client that keeps to a schedule.
extension ServerBenchmarks {
    /// The medians of the ratios phase, which the open-loop and floor phases start from.
    struct Ratios {
        /// Server CPU per answered request, µs.
        var healthzCPU: Double
        var validateCPU: Double
        /// Answered (2xx) requests per second.
        var healthzRate: Double
        var validateRate: Double
    }

    /// `/healthz` and validate alternately (healthz, validate, healthz, …, `rounds` of each),
    /// with the server pinned to one CPU and wrk to another unless `--no-pin`. Reports both
    /// ratios: throughput (validate's requests/s ÷ `/healthz`'s, which pinning makes comparable
    /// between runs) and CPU per request (validate's server CPU ÷ `/healthz`'s), each round's
    /// figures beside the medians.
    func healthzValidateRatios(_ server: BenchServer, wrk: Wrk, pinning: CPUPinning) async throws -> Ratios {
        let legs: [(name: String, run: () async throws -> Wrk.Result)] = [
            ("healthz", { try await wrk.run(url: server.base + "/healthz", script: WrkScripts.healthz, name: "healthz") }),
            ("validate", { try await server.validate(with: wrk) }),
        ]
        let (perRequest, results) = try await alternatedRounds(legs)
        let ratios = Ratios(
            healthzCPU: median(perRequest["healthz"] ?? []), validateCPU: median(perRequest["validate"] ?? []),
            healthzRate: median((results["healthz"] ?? []).map(\.requestsPerSecond)), validateRate: median((results["validate"] ?? []).map(\.requestsPerSecond))
        )
        func list(_ values: [Double]) -> String { "[" + values.map { String(format: "%.1f", $0) }.joined(separator: ",") + "]" }
        let runs = (results["healthz"] ?? []) + (results["validate"] ?? [])
        let throughputRatio = ratios.validateRate / max(ratios.healthzRate, 1e-9)
        let cpuRatio = ratios.validateCPU / max(ratios.healthzCPU, 1e-9)
        let validateP99 = median((results["validate"] ?? []).map(\.p99ms))
        printJSONLine("server.ratios", [
            ("pinned", "\(pinning.isPinned)"), ("connections", "\(wrk.connections)"), ("wrk_threads", "\(min(wrk.threads, wrk.connections))"),
            ("rounds", "\(rounds)"), ("seconds", "\(seconds)"), ("licenses", "\(licenses)"),
            ("healthz_ops_per_sec", String(format: "%.1f", ratios.healthzRate)), ("validate_ops_per_sec", String(format: "%.1f", ratios.validateRate)),
            ("throughput_ratio", String(format: "%.3f", throughputRatio)),
            ("healthz_cpu_us", String(format: "%.1f", ratios.healthzCPU)), ("validate_cpu_us", String(format: "%.1f", ratios.validateCPU)),
            ("cpu_ratio", String(format: "%.3f", cpuRatio)),
            ("healthz_ops_per_sec_rounds", list((results["healthz"] ?? []).map(\.requestsPerSecond))),
            ("validate_ops_per_sec_rounds", list((results["validate"] ?? []).map(\.requestsPerSecond))),
            ("healthz_cpu_us_rounds", list(perRequest["healthz"] ?? [])), ("validate_cpu_us_rounds", list(perRequest["validate"] ?? [])),
            ("validate_p99_ms", String(format: "%.3f", validateP99)),
            ("errors", "\(runs.map(\.errors).reduce(0, +))"), ("non_2xx", "\(runs.map(\.non2xx).reduce(0, +))"),
        ])
        return ratios
    }

    /// Validate offered at a constant arrival rate (open loop) by the paced client, a process of
    /// its own on the clients' CPU: `--paced-rate`, by default half of `saturation` (validate's
    /// requests/s in the ratios phase), for `--paced-seconds`. Each latency runs from the
    /// request's scheduled send, so a stalled server is not hidden by a client that waited for it
    /// (coordinated omission). Target: p99 under 5 ms.
    func openLoop(_ server: BenchServer, wrk: Wrk, pinning: CPUPinning, saturation: Double?) async throws {
        let rate: Double
        if let offered = pacedRate {
            rate = offered
        } else if let saturation, saturation > 0 {
            rate = saturation / 2
        } else {
            throw BenchError("open-loop: no rate to offer (the ratios phase measured none; pass --paced-rate)")
        }
        let duration = pacedSeconds ?? seconds
        let (result, serverCPU) = try await ProcessCPU.measure {
            try await PacedLoad.run(
                prefix: pinning.clientPrefix, url: server.base + "/bench/app/validate", pairs: server.pairsFile, sdkKey: server.sdkKey,
                rate: rate, seconds: duration, connections: wrk.connections, latencies: openLoopLatencies
            )
        }
        // Over the whole paced run, its second of warm-up included.
        let sent = rate * (Double(duration) + 1)
        let serverCPUPerRequest = serverCPU.map { String(format: "%.1f", $0 * 1e6 / sent) } ?? "null"
        if result.failures > 0 { wrk.ledger.record("open-loop: \(result.errors) errors, \(result.non2xx) non-2xx of \(result.requests)") }
        func milliseconds(_ microseconds: Double) -> String { String(format: "%.3f", microseconds / 1000) }
        let saturationRate = saturation.map { String(format: "%.1f", $0) } ?? "null"
        let meets = result.p99_us < 5_000 && result.failures == 0
        printJSONLine("server.validate_open_loop", [
            ("pinned", "\(pinning.isPinned)"), ("seconds", "\(duration)"), ("connections", "\(wrk.connections)"), ("licenses", "\(licenses)"),
            ("saturation_ops_per_sec", saturationRate),
            ("offered_ops_per_sec", String(format: "%.1f", rate)), ("ops_per_sec", String(format: "%.1f", result.answered_per_sec)),
            ("p50_ms", milliseconds(result.p50_us)), ("p90_ms", milliseconds(result.p90_us)), ("p99_ms", milliseconds(result.p99_us)),
            ("max_ms", milliseconds(result.max_us)), ("send_lag_p99_ms", milliseconds(result.send_lag_p99_us)),
            ("server_cpu_us", serverCPUPerRequest), ("client_cpu_us", result.client_cpu_s.map { String(format: "%.1f", $0 * 1e6 / sent) } ?? "null"),
            ("requests", "\(result.requests)"), ("errors", "\(result.errors)"), ("non_2xx", "\(result.non2xx)"),
            ("target", #""p99 < 5 ms at the offered rate, 0 errors""#), ("meets_target", "\(meets)"),
        ])
    }
}
