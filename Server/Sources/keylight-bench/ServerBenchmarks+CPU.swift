import Foundation

extension ServerBenchmarks {
    /// Each leg once per round, `rounds` rounds (machine noise hits every leg alike): each run's
    /// wrk result, and the server's CPU per answered request in µs, by leg name.
    func alternatedRounds(_ legs: [(name: String, run: () async throws -> Wrk.Result)]) async throws -> (cpu: [String: [Double]], results: [String: [Wrk.Result]]) {
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
        return (perRequest, results)
    }

    /// The server's CPU time per answered request for `/healthz`, validate, signed validate and
    /// activate, in alternating rounds (machine noise hits every leg alike). CPU per request does
    /// not depend on wrk sharing the cores, so it compares the legs where requests/s cannot.
    /// `totalLicenses` is how many licenses `server`'s database holds, for the report.
    func cpuPerRequest(_ server: BenchServer, wrk: Wrk, totalLicenses: Int) async throws {
        let legs: [(name: String, run: () async throws -> Wrk.Result)] = [
            ("healthz", { try await wrk.run(url: server.base + "/healthz", script: WrkScripts.healthz, name: "healthz") }),
            ("validate", { try await server.validate(with: wrk) }),
            ("signed", { try await server.validate(with: wrk, nonce: BenchServer.nonce) }),
            ("activate", { try await wrk.run(url: server.base + "/bench/app/activate", script: WrkScripts.activate, name: "activate", arguments: [server.pairsFile.path, server.sdkKey]) }),
        ]
        let (perRequest, results) = try await alternatedRounds(legs)
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
        let pace = max(1, Int((Double(wrk.connections) * 1000 / max(1, saturation / 2)).rounded()))
        let offered = Double(wrk.connections) * 1000 / Double(pace)
        let paced = try await server.validate(with: wrk, script: WrkScripts.pacedValidate, pace: "\(pace)")
        print(#"{"benchmark":"server.validate_paced","licenses":\#(totalLicenses),"saturation_ops_per_sec":\#(String(format: "%.1f", saturation)),"offered_ops_per_sec":\#(String(format: "%.1f", offered)),"ops_per_sec":\#(String(format: "%.1f", paced.requestsPerSecond)),"# +
              #""p50_ms":\#(String(format: "%.3f", paced.p50ms)),"p99_ms":\#(String(format: "%.3f", paced.p99ms)),"errors":\#(paced.errors),"non_2xx":\#(paced.non2xx),"# +
              #""target":"p99 < 10 ms at half of saturation","meets_target":\#(paced.p99ms < 10 && paced.failures == 0)}"#)
        // Issue 39's targets: validate at most 1.6x /healthz's CPU, at least 0.55x its requests/s
        // at these connections, p99 under 8 ms saturated, no errors; activate at most 5x.
        let validateRatio = median(perRequest["validate"] ?? []) / healthz
        let activateRatio = median(perRequest["activate"] ?? []) / healthz
        let healthzRate = median((results["healthz"] ?? []).map(\.requestsPerSecond))
        let throughputRatio = saturation / max(1, healthzRate)
        let validateP99 = median((results["validate"] ?? []).map(\.p99ms))
        let validateFailures = (results["validate"] ?? []).map(\.failures).reduce(0, +)
        let meets = validateRatio <= 1.6 && throughputRatio >= 0.55 && validateP99 < 8 && validateFailures == 0
            && activateRatio <= 5.0
        print(#"{"benchmark":"server.cpu_per_request","licenses":\#(totalLicenses),"rounds":\#(rounds),"healthz_cpu_us":\#(String(format: "%.1f", healthz)),"# +
              #""healthz_ops_per_sec":\#(String(format: "%.1f", healthzRate)),"validate_throughput_ratio":\#(String(format: "%.3f", throughputRatio)),"# +
              [leg("validate"), leg("signed"), leg("activate")].joined(separator: ",") +
              #","target":"validate <= 1.6 x healthz CPU, >= 0.55 x its requests/s, p99 < 8 ms saturated, 0 errors; activate <= 5.0 x healthz CPU","meets_target":\#(meets)}"#)
    }
}
