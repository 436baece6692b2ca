import Foundation
import KeylightCore
@_spi(Benchmarks) import KeylightServer

extension ServerBenchmarks {
    /// Issue 52: validate at its floor. What validate costs beyond `/healthz` (server CPU per
    /// request, from the ratios phase of the same run) against the parts no glue can remove, each
    /// timed alone in this process on the same database (``ValidateFloor``): one Ed25519
    /// signature of a lease's signed payload, the license read validate makes, and the answer's
    /// JSON. Target: at most 1.15 x their sum. Each part is the median of `rounds` rounds of
    /// `--floor-seconds`, as CPU per call (this process's, as the legs are measured).
    func validateFloor(_ server: BenchServer, ratios: Ratios) async throws {
        let text = try String(contentsOf: server.pairsFile, encoding: .utf8)
        guard let first = text.split(separator: "\n").first else { throw BenchError("floor: no license in \(server.pairsFile.path)") }
        let pair = first.split(separator: " ").map(String.init)
        guard pair.count == 2 else { throw BenchError("floor: unreadable line in \(server.pairsFile.path): \(first)") }
        let parts = try await ValidateFloor(
            database: server.database, licenseKey: pair[0], instanceId: pair[1], tenantId: "bench", productId: "app", now: SystemWallClock().unixSeconds
        )
        guard try await parts.readLicense() else { throw BenchError("floor: the license read found nothing") }
        var signature: [Double] = []
        var read: [Double] = []
        var json: [Double] = []
        for _ in 0..<rounds {
            signature.append(try await cpuPerCall { blackHole(parts.signLease()) })
            read.append(try await cpuPerCall {
                let found = try await parts.readLicense()
                blackHole(found)
            })
            json.append(try await cpuPerCall { blackHole(parts.encodeAnswer()) })
        }
        let signatureMicros = median(signature)
        let readMicros = median(read)
        let jsonMicros = median(json)
        let floorMicros = signatureMicros + readMicros + jsonMicros
        let above = ratios.validateCPU - ratios.healthzCPU
        let ratio = above / max(floorMicros, 1e-9)
        printJSONLine("server.validate_floor", [
            ("rounds", "\(rounds)"), ("floor_seconds", String(format: "%.2f", floorSeconds)),
            ("healthz_cpu_us", String(format: "%.1f", ratios.healthzCPU)), ("validate_cpu_us", String(format: "%.1f", ratios.validateCPU)),
            ("above_healthz_us", String(format: "%.1f", above)),
            ("signature_us", String(format: "%.2f", signatureMicros)), ("license_read_us", String(format: "%.2f", readMicros)),
            ("answer_json_us", String(format: "%.2f", jsonMicros)), ("answer_bytes", "\(parts.encodeAnswer())"),
            ("floor_us", String(format: "%.2f", floorMicros)), ("ratio", String(format: "%.3f", ratio)),
            ("target", #""validate - healthz CPU <= 1.15 x (signature + license read + answer JSON)""#), ("meets_target", "\(ratio <= 1.15)"),
        ])
    }

    /// This process's CPU time per call of `body`, in µs: calls in batches of 64 for about
    /// `--floor-seconds`, with `/proc/self/stat` read before and after (its clock ticks are 10 ms,
    /// so a second of calls reads to about 1 %).
    func cpuPerCall(_ body: () async throws -> Void) async throws -> Double {
        let clock = ContinuousClock()
        let budget = Duration.seconds(floorSeconds)
        guard let before = ProcessCPU.seconds() else { throw BenchError("cpu: /proc/self/stat is not readable here") }
        let start = clock.now
        var calls = 0
        while clock.now - start < budget {
            for _ in 0..<64 { try await body() }
            calls += 64
        }
        guard let after = ProcessCPU.seconds() else { throw BenchError("cpu: /proc/self/stat is not readable here") }
        return (after - before) / Double(calls) * 1e6
    }
}
