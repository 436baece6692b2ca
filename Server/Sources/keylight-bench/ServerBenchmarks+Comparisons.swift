import Foundation

/// The phases that measure two variants alternately, so machine noise hits both alike.
extension ServerBenchmarks {
    /// Validate with and without the hosted clients' telemetry: what reading and recording it
    /// costs on the hottest path.
    func telemetryComparison(_ small: BenchServer, wrk: Wrk) async throws {
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

    /// Signed and unsigned validate. Both legs look at every response: the unsigned one must
    /// carry no signature, the signed one a signature on every response, and sampled signatures
    /// must verify.
    func signedComparison(_ small: BenchServer, wrk: Wrk, directory: URL) async throws {
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

    /// Validate on the small database and on one holding `largeLicenses` in all (the same active
    /// licenses and instances).
    func databaseSizeComparison(_ small: BenchServer, wrk: Wrk, directory: URL) async throws {
        let large = try await BenchServer.start(name: "large", activeLicenses: licenses, totalLicenses: largeLicenses, poolSize: poolSize, directory: directory)
        defer { large.stop() }
        // The filler import alone: not the server's start-up, nor seeding the active licenses.
        let imported = largeLicenses - licenses
        let importSeconds = large.importDuration?.seconds ?? 0
        print(#"{"benchmark":"server.import","licenses":\#(imported),"seconds":\#(String(format: "%.2f", importSeconds)),"licenses_per_sec":\#(String(format: "%.0f", Double(imported) / max(importSeconds, 1e-9)))}"#)
        let warmUp = Wrk(threads: wrk.threads, connections: wrk.connections, seconds: 2, directory: directory, cpu: wrk.cpu)
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
}
