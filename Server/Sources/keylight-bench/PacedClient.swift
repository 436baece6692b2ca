import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore

/// `keylight-bench paced-client`: validate at a constant arrival rate (open loop), for the
/// `server` command's open-loop phase, which runs it as a process of its own (on the clients'
/// CPU when pinned), so that none of its work is counted as the server's. Request `i` is due
/// `i / rate` seconds after the start and is sent then, whether or not earlier ones were answered
/// (up to `--connections` at once; more wait for a connection, and that wait counts); its latency
/// runs from when it was due to when its whole answer was read, so a server that stalls shows in
/// every request it held back (no coordinated omission). The first `--warm-up-seconds` open the
/// connections and are not counted. Prints one JSON line (``PacedLoad/Result``).
struct PacedClient: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "paced-client", abstract: "Validate at a constant arrival rate, for `server`'s open-loop phase (internal).", shouldDisplay: false
    )

    @Option var url: String
    /// `<license key> <instance id>` lines, as the validate wrk script reads them.
    @Option var pairs: String
    @Option var sdkKey: String
    @Option var rate: Double
    @Option var seconds: Double
    @Option var connections = 32
    @Option var warmUpSeconds = 1.0

    /// One scheduled request.
    struct Outcome: Sendable {
        var index: Int
        /// µs from when it was due to its whole answer (nil: no answer).
        var latency: Double?
        /// µs from when it was due to when it was handed to the HTTP client (the client's own lateness).
        var lag: Double
        /// Seconds from the start to its answer (or failure).
        var finished: Double
        var status: UInt
    }

    func run() async throws {
        let lines = try String(contentsOfFile: pairs, encoding: .utf8).split(separator: "\n")
        let bodies: [ByteBuffer] = lines.compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 2 else { return nil }
            return ByteBuffer(string: #"{"license_key":"\#(fields[0])","instance_id":"\#(fields[1])"}"#)
        }
        guard !bodies.isEmpty else { throw BenchError("paced-client: no `<license key> <instance id>` lines in \(pairs)") }
        guard rate > 0, seconds > 0, connections >= 1, warmUpSeconds >= 0 else { throw BenchError("paced-client: --rate, --seconds and --connections must be above 0") }
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
        let warmUp = Int((warmUpSeconds * rate).rounded())
        let total = warmUp + max(1, Int((seconds * rate).rounded()))
        let target = url
        let key = sdkKey
        let perSecond = rate
        let outcomes = try await HTTPClient.withHTTPClient(configuration: configuration) { http in
            try await Self.offer(http, url: target, sdkKey: key, bodies: bodies, rate: perSecond, total: total)
        }
        let counted = outcomes.filter { $0.index >= warmUp }
        let latencies = counted.compactMap(\.latency).sorted()
        let lags = counted.map(\.lag).sorted()
        let errors = counted.count - latencies.count
        let non2xx = counted.filter { $0.latency != nil && !(200..<300).contains($0.status) }.count
        // Answers per second over the counted span: from the first counted request's due time to
        // the last answer (longer than --seconds when the server fell behind).
        let firstDue = Double(warmUp) / rate
        let span = max(seconds, (counted.map(\.finished).max() ?? 0) - firstDue)
        let answered = Double(latencies.count - non2xx) / span
        func percentile(_ sorted: [Double], _ percent: Double) -> String {
            guard !sorted.isEmpty else { return "0" }
            let rank = Int((percent / 100 * Double(sorted.count)).rounded(.up))
            return String(format: "%.1f", sorted[min(sorted.count - 1, max(0, rank - 1))])
        }
        print(#"{"requests":\#(counted.count),"errors":\#(errors),"non2xx":\#(non2xx),"offered_per_sec":\#(String(format: "%.1f", rate)),"# +
              #""answered_per_sec":\#(String(format: "%.1f", answered)),"p50_us":\#(percentile(latencies, 50)),"p90_us":\#(percentile(latencies, 90)),"# +
              #""p99_us":\#(percentile(latencies, 99)),"max_us":\#(percentile(latencies, 100)),"send_lag_p99_us":\#(percentile(lags, 99))}"#)
    }

    /// Sends request `index` at `start + index / rate` for every index below `total`, each in a
    /// task of its own, and answers every outcome once all are answered or failed.
    static func offer(_ http: HTTPClient, url: String, sdkKey: String, bodies: [ByteBuffer], rate: Double, total: Int) async throws -> [Outcome] {
        let clock = ContinuousClock()
        let start = clock.now + .milliseconds(20)
        return try await withThrowingTaskGroup(of: Outcome.self) { group in
            for index in 0..<total {
                let due = start + .seconds(Double(index) / rate)
                // No tolerance: without one, Dispatch may wake the sleeper up to a millisecond late,
                // and that lateness would be counted in every latency.
                if clock.now < due { try await Task.sleep(until: due, tolerance: Duration.zero, clock: clock) }
                let body = bodies[index % bodies.count]
                group.addTask {
                    let lag = (clock.now - due).seconds * 1e6
                    var request = HTTPClientRequest(url: url)
                    request.method = .POST
                    request.headers.add(name: "X-Keylight-SDK-Key", value: sdkKey)
                    request.headers.add(name: "Content-Type", value: "application/json")
                    request.body = .bytes(body)
                    do {
                        let response = try await http.execute(request, timeout: .seconds(30))
                        _ = try await response.body.collect(upTo: 1 << 20)
                        let now = clock.now
                        return Outcome(index: index, latency: (now - due).seconds * 1e6, lag: lag, finished: (now - start).seconds, status: response.status.code)
                    } catch {
                        return Outcome(index: index, latency: nil, lag: lag, finished: (clock.now - start).seconds, status: 0)
                    }
                }
            }
            var outcomes: [Outcome] = []
            outcomes.reserveCapacity(total)
            for try await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
    }
}

/// Runs the paced client (``PacedClient``) as a process of its own and reads its line.
enum PacedLoad {
    /// The paced client's JSON line; times in µs.
    struct Result: Decodable {
        var requests: Int
        var errors: Int
        var non2xx: Int
        var offered_per_sec: Double
        var answered_per_sec: Double
        var p50_us: Double
        var p90_us: Double
        var p99_us: Double
        var max_us: Double
        var send_lag_p99_us: Double

        var failures: Int { errors + non2xx }
    }

    /// `prefix` (``CPUPinning/clientPrefix``) runs it on the clients' CPU.
    static func run(prefix: [String], url: String, pairs: URL, sdkKey: String, rate: Double, seconds: Int, connections: Int) async throws -> Result {
        let command = prefix + [
            ChildServer.executable.path, "paced-client", "--url", url, "--pairs", pairs.path, "--sdk-key", sdkKey,
            "--rate", String(format: "%.3f", rate), "--seconds", "\(seconds)", "--connections", "\(connections)",
        ]
        let (status, output) = try await Tool.run(command)
        guard status == 0, let line = output.split(separator: "\n").last(where: { $0.hasPrefix("{\"requests\"") }) else {
            throw BenchError("paced client failed (exit \(status)): \(output)")
        }
        return try JSONDecoder().decode(Result.self, from: Data(line.utf8))
    }
}
