import Foundation
import NIOCore

extension ReleaseBenchmarks {
    /// The large artifact downloaded whole, one client at a time, from the server and from nginx
    /// (one process, `sendfile`) serving the same file on disk, alternating each round. Without
    /// nginx the server's figure is reported alone, and the target is not called met.
    func downloadThroughput(_ large: ReleaseSeeder.LargeArtifact, base: String, artifacts: String, directory: URL, ledger: FailureLedger) async throws {
        var reference: NginxServer?
        var missing: String?
        if let binary = NginxServer.locate(nginx) {
            do {
                reference = try await NginxServer.start(binary: binary, root: artifacts, directory: directory.appendingPathComponent("nginx"))
            } catch {
                // Not a pass: the run ends non-zero, after the other figures are taken.
                ledger.record("nginx: \(error)")
                missing = "nginx did not start"
            }
        } else {
            missing = nginx.map { "no nginx at \($0)" } ?? "no nginx"
        }
        defer { reference?.stop() }
        let keylightURL = base + large.path
        let nginxURL = reference.map { "http://127.0.0.1:\($0.port)/" + large.storedPath }
        var keylightRates: [Double] = []
        var nginxRates: [Double] = []
        // Round 0 is not counted: it checks that both serve the whole file and warms both.
        for round in 0...rounds {
            let keylight = try await wholeDownload(keylightURL, length: large.length, server: "keylight")
            if round > 0 { keylightRates.append(keylight / 1_048_576) }
            if let nginxURL {
                let rate = try await wholeDownload(nginxURL, length: large.length, server: "nginx")
                if round > 0 { nginxRates.append(rate / 1_048_576) }
            }
        }
        func list(_ rates: [Double]) -> String { "[" + rates.map { String(format: "%.1f", $0) }.joined(separator: ",") + "]" }
        let keylightRate = median(keylightRates)
        var fields = [
            ("artifact_mib", "\(artifactMb)"), ("rounds", "\(rounds)"), ("client", "\"curl\""),
            ("keylight_mib_per_sec", String(format: "%.1f", keylightRate)), ("keylight_rounds_mib_per_sec", list(keylightRates)),
        ]
        let target = ("target", quoted("keylight >= 0.8 x nginx"))
        if let missing {
            fields += [
                ("nginx_mib_per_sec", "null"), ("ratio", "null"), target,
                ("meets_target", quoted("skipped (\(missing))")), ("note", quoted("\(missing): keylight's figure alone")),
            ]
        } else {
            let nginxRate = median(nginxRates)
            let ratio = keylightRate / max(nginxRate, 1e-9)
            fields += [
                ("nginx_mib_per_sec", String(format: "%.1f", nginxRate)), ("nginx_rounds_mib_per_sec", list(nginxRates)),
                ("ratio", String(format: "%.3f", ratio)), target, ("meets_target", "\(ratio >= 0.8)"),
            ]
        }
        emit("releases.download_throughput", fields)
    }

    /// One whole download's rate in bytes per second. Anything short of the whole file answered
    /// 200 ends the run: the rate of a failed transfer measures something else.
    private func wholeDownload(_ url: String, length: Int64, server: String) async throws -> Double {
        let transfer = try await Curl.download(url, maxSeconds: 300)
        guard transfer.isComplete(length: length) else {
            throw BenchError("\(server) download of \(url): status \(transfer.status), \(transfer.bytes) of \(length) bytes, curl exit \(transfer.exitStatus)")
        }
        return transfer.bytesPerSecond
    }

    /// The server process's CPU time per answered request: the device's appcast against its
    /// validate, in alternating rounds (machine noise hits both legs alike), as
    /// `server.cpu_per_request` measures, but from the child's `/proc/<pid>/stat`.
    func appcastCPU(child: ChildServer, device: ReleaseSeeder.Device, seeder: ReleaseSeeder, directory: URL, ledger: FailureLedger) async throws {
        // The feed measured must be the one meant: the builds Sparkle could pick for this device.
        let (status, body) = try await seeder.send("GET", "/bench/app/appcast.xml", headers: [("X-Keylight-Lease", device.leaseHeader)])
        let text = String(buffer: body)
        guard status == 200 else { throw BenchError("appcast: \(status) \(text.prefix(300))") }
        let items = text.components(separatedBy: "<item>").count - 1
        let expected = ReleaseSeeder.expectedItems(releases)
        if items != expected { ledger.record("appcast: \(items) items, expected \(expected) of \(releases) releases") }

        let base = seeder.base
        let wrk = Wrk(connections: connections, seconds: seconds, directory: directory, ledger: ledger)
        let legs: [(name: String, run: () async throws -> Wrk.Result)] = [
            ("appcast", { try await wrk.run(url: base + "/bench/app/appcast.xml", script: WrkScripts.appcast, name: "appcast", arguments: [device.leaseHeader]) }),
            ("validate", { try await wrk.run(url: base + "/bench/app/validate", script: WrkScripts.validate, name: "validate", arguments: [device.pairs.path, device.sdkKey, "", ""]) }),
        ]
        let pid = child.process.processIdentifier
        var perRequest: [String: [Double]] = [:]
        var results: [String: [Wrk.Result]] = [:]
        for _ in 0..<rounds {
            for leg in legs {
                guard let before = ProcessCPU.seconds(pid: pid) else { throw BenchError("cpu: /proc/\(pid)/stat is not readable here") }
                let result = try await leg.run()
                guard let after = ProcessCPU.seconds(pid: pid) else { throw BenchError("cpu: the server process is gone") }
                let answered = max(1, result.requests - result.non2xx)
                perRequest[leg.name, default: []].append((after - before) / Double(answered) * 1e6)
                results[leg.name, default: []].append(result)
            }
        }
        let appcastMicros = median(perRequest["appcast"] ?? [])
        let validateMicros = median(perRequest["validate"] ?? [])
        let ratio = appcastMicros / max(validateMicros, 1e-9)
        let runs = (results["appcast"] ?? []) + (results["validate"] ?? [])
        let failures = runs.map(\.failures).reduce(0, +)
        func rate(_ name: String) -> String { String(format: "%.1f", median((results[name] ?? []).map(\.requestsPerSecond))) }
        func p99(_ name: String) -> String { String(format: "%.3f", median((results[name] ?? []).map(\.p99ms))) }
        emit("releases.appcast_cpu", [
            ("releases", "\(releases)"), ("rounds", "\(rounds)"), ("seconds", "\(seconds)"), ("connections", "\(connections)"),
            ("appcast_items", "\(items)"), ("appcast_bytes", "\(body.readableBytes)"),
            ("appcast_cpu_us", String(format: "%.1f", appcastMicros)), ("validate_cpu_us", String(format: "%.1f", validateMicros)), ("ratio", String(format: "%.2f", ratio)),
            ("appcast_ops_per_sec", rate("appcast")), ("validate_ops_per_sec", rate("validate")),
            ("appcast_p99_ms", p99("appcast")), ("validate_p99_ms", p99("validate")),
            ("errors", "\(runs.map(\.errors).reduce(0, +))"), ("non_2xx", "\(runs.map(\.non2xx).reduce(0, +))"),
            ("target", quoted("appcast <= 2 x validate CPU per request")), ("meets_target", "\(ratio <= 2 && failures == 0)"),
        ])
    }

    /// The server process's resident memory before, at the peak of (sampled every 20 ms), and a
    /// second after `clients` downloads of the large artifact at once, each client a curl
    /// writing to `/dev/null`. Streaming holds a few chunks per connection whatever the file's
    /// size; reading files whole would show as clients x file size.
    func downloadMemory(child: ChildServer, url: String, length: Int64, ledger: FailureLedger) async throws {
        let pid = child.process.processIdentifier
        let before = ProcessMemory.read(pid: pid)
        guard before.rssKiB > 0 else { throw BenchError("memory: /proc/\(pid)/status is not readable here") }
        let sampler = Task { () -> Int in
            var peak = 0
            while !Task.isCancelled {
                peak = max(peak, ProcessMemory.read(pid: pid).rssKiB)
                try? await Task.sleep(for: .milliseconds(20))
            }
            return peak
        }
        defer { sampler.cancel() }
        let clock = ContinuousClock()
        let start = clock.now
        let transfers = try await withThrowingTaskGroup(of: Curl.Transfer.self) { group in
            for _ in 0..<clients {
                group.addTask { try await Curl.download(url, maxSeconds: 600) }
            }
            var all: [Curl.Transfer] = []
            for try await transfer in group { all.append(transfer) }
            return all
        }
        let elapsed = (clock.now - start).seconds
        sampler.cancel()
        let sampled = await sampler.value
        let peak = max(sampled, ProcessMemory.read(pid: pid).rssKiB)
        // What is left once the clients are gone: freed, or kept by the allocator for the next.
        try await Task.sleep(for: .seconds(1))
        let after = ProcessMemory.read(pid: pid)
        let complete = transfers.filter { $0.isComplete(length: length) }
        if complete.count < clients {
            let failed = transfers.filter { !$0.isComplete(length: length) }.prefix(3).map { "status \($0.status), \($0.bytes) bytes, curl exit \($0.exitStatus)" }
            ledger.record("parallel downloads: \(clients - complete.count) of \(clients) incomplete (\(failed.joined(separator: "; ")))")
        }
        let growth = Double(peak - before.rssKiB) / 1024
        let received = transfers.map(\.bytes).reduce(0, +)
        emit("releases.download_memory", [
            ("clients", "\(clients)"), ("artifact_mib", "\(artifactMb)"), ("complete", "\(complete.count)"),
            ("seconds", String(format: "%.2f", elapsed)), ("aggregate_mib_per_sec", String(format: "%.1f", Double(received) / 1_048_576 / max(elapsed, 1e-9))),
            ("rss_mib_before", String(format: "%.1f", Double(before.rssKiB) / 1024)), ("rss_mib_peak", String(format: "%.1f", Double(peak) / 1024)),
            ("rss_mib_after", String(format: "%.1f", Double(after.rssKiB) / 1024)), ("growth_mib", String(format: "%.1f", growth)),
            ("target", quoted("peak RSS - baseline <= 64 MiB")), ("meets_target", "\(growth <= 64 && complete.count == clients)"),
        ])
    }
}
