import Foundation

extension ServerBenchmarks {
    /// The process's memory after sustained validate load on a database of `--large-licenses`
    /// licenses. The server runs in this process, beside the small one the other phases use, so
    /// the small server's share is read first and reported too.
    func footprint(small: BenchServer, directory: URL, wrk: Wrk) async throws {
        let before = ProcessMemory.read()
        let large = try await BenchServer.start(name: "footprint", activeLicenses: licenses, totalLicenses: largeLicenses, poolSize: poolSize, directory: directory)
        defer { large.stop() }
        let loaded = ProcessMemory.read()
        let sustained = Wrk(
            threads: wrk.threads, connections: wrk.connections, seconds: footprintSeconds, directory: directory, ledger: wrk.ledger, cpu: wrk.cpu
        )
        let result = try await large.validate(with: sustained)
        let after = ProcessMemory.read()
        print(#"{"benchmark":"server.footprint","licenses":\#(largeLicenses),"seconds":\#(footprintSeconds),"# +
              #""rss_mib_before":\#(before.rssMiB),"rss_mib_after_import":\#(loaded.rssMiB),"rss_mib_after_load":\#(after.rssMiB),"peak_rss_mib":\#(after.peakMiB),"# +
              #""ops_per_sec":\#(String(format: "%.1f", result.requestsPerSecond)),"p99_ms":\#(String(format: "%.3f", result.p99ms)),"errors":\#(result.errors),"non_2xx":\#(result.non2xx)}"#)
    }
}
