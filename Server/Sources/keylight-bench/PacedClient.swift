import ArgumentParser
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NIOConcurrencyHelpers

/// `keylight-bench paced-client`: validate at a constant arrival rate (open loop), for the
/// `server` command's open-loop phase, which runs it as a process of its own (on the clients'
/// CPU when pinned), so that none of its work is counted as the server's. Request `i` is due
/// `i / rate` seconds after the start and is sent then, whether or not earlier ones were answered
/// (up to `--connections` at once; more wait for a connection, and that wait counts); its latency
/// runs from when it was due to when its whole answer was read, so a server that stalls shows in
/// every request it held back (no coordinated omission). The connections are opened before the
/// first request is due, and the first `--warm-up-seconds` of requests are not counted. Prints
/// one JSON line (``PacedLoad/Result``).
struct PacedClient: ParsableCommand {
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
    /// Writes every counted request as a CSV line (`due_s,latency_us,lag_us,status`), to find
    /// when the slow ones came.
    @Option var latencies: String?

    /// One scheduled request.
    struct Outcome: Sendable {
        var index: Int
        /// µs from when it was due to its whole answer (nil: no answer).
        var latency: Double?
        /// µs from when it was due to when it was sent (the client's own lateness).
        var lag: Double
        /// Seconds from the start to its answer (or failure).
        var finished: Double
        var status: UInt
    }

    func run() throws {
        let lines = try String(contentsOfFile: pairs, encoding: .utf8).split(separator: "\n")
        guard let target = URL(string: url), let host = target.host, let port = target.port, target.scheme == "http" else {
            throw BenchError("paced-client: --url must be http://host:port/path")
        }
        let requests: [[UInt8]] = lines.compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 2 else { return nil }
            let body = #"{"license_key":"\#(fields[0])","instance_id":"\#(fields[1])"}"#
            return Array(("POST \(target.path) HTTP/1.1\r\nHost: \(host):\(port)\r\nX-Keylight-SDK-Key: \(sdkKey)\r\n" +
                          "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body).utf8)
        }
        guard !requests.isEmpty else { throw BenchError("paced-client: no `<license key> <instance id>` lines in \(pairs)") }
        guard rate > 0, seconds > 0, connections >= 1, warmUpSeconds >= 0 else { throw BenchError("paced-client: --rate, --seconds and --connections must be above 0") }
        // A server that closes a connection must not end the process with SIGPIPE: the send fails instead.
        signal(SIGPIPE, SIG_IGN)
        let warmUp = Int((warmUpSeconds * rate).rounded())
        let total = warmUp + max(1, Int((seconds * rate).rounded()))
        // Its own CPU while offering the load, not while reading the pairs (a million lines for
        // the large runs).
        let cpuBefore = ProcessCPU.seconds()
        let outcomes = try Self.offer(host: host, port: port, requests: requests, rate: rate, total: total, connections: connections)
        let cpu = ProcessCPU.seconds().flatMap { after in cpuBefore.map { after - $0 } }
        let counted = outcomes.filter { $0.index >= warmUp }.sorted { $0.index < $1.index }
        if let latencies {
            let lines = counted.map { outcome in
                let latency = outcome.latency.map { String(format: "%.1f", $0) } ?? ""
                return String(format: "%.6f", Double(outcome.index) / rate) + ",\(latency)," + String(format: "%.1f", outcome.lag) + ",\(outcome.status)"
            }
            try (["due_s,latency_us,lag_us,status"] + lines).joined(separator: "\n").appending("\n").write(toFile: latencies, atomically: true, encoding: .utf8)
        }
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
              #""p99_us":\#(percentile(latencies, 99)),"max_us":\#(percentile(latencies, 100)),"send_lag_p99_us":\#(percentile(lags, 99)),"# +
              #""client_cpu_s":\#(cpu.map { String(format: "%.3f", $0) } ?? "null")}"#)
    }

    /// Sends request `index` at `start + index / rate` for every index below `total`, from
    /// `connections` threads, each with a connection of its own: a free thread takes the next
    /// index, sleeps until it is due, sends it and reads its answer. When every thread is busy
    /// the next request waits for one, and that wait is in its latency. A failed request's thread
    /// connects again for its next one.
    static func offer(host: String, port: Int, requests: [[UInt8]], rate: Double, total: Int, connections: Int) throws -> [Outcome] {
        // Every connection is opened before the clock starts: a refused one fails the run here.
        var opened: [BlockingHTTPConnection] = []
        for _ in 0..<connections { opened.append(try BlockingHTTPConnection(host: host, port: port, timeout: 30)) }
        let clock = ContinuousClock()
        let start = clock.now + .milliseconds(20)
        let next = NIOLockedValueBox(0)
        let results = NIOLockedValueBox([Outcome]())
        let finished = DispatchGroup()
        for connection in opened {
            finished.enter()
            // A thread per connection (not a task): blocking calls are the point, and they must
            // not occupy Swift Concurrency's few threads.
            let thread = Thread { [connection] in
                var connection: BlockingHTTPConnection? = connection
                var outcomes: [Outcome] = []
                while true {
                    let index = next.withLockedValue { value in
                        defer { value += 1 }
                        return value
                    }
                    guard index < total else { break }
                    let due = start + .seconds(Double(index) / rate)
                    let wait = due - clock.now
                    if wait > .zero { Thread.sleep(forTimeInterval: wait.seconds) }
                    let lag = (clock.now - due).seconds * 1e6
                    do {
                        if connection == nil { connection = try BlockingHTTPConnection(host: host, port: port, timeout: 30) }
                        let status = try connection!.exchange(requests[index % requests.count])
                        let now = clock.now
                        outcomes.append(Outcome(index: index, latency: (now - due).seconds * 1e6, lag: lag, finished: (now - start).seconds, status: UInt(status)))
                    } catch {
                        connection = nil
                        outcomes.append(Outcome(index: index, latency: nil, lag: lag, finished: (clock.now - start).seconds, status: 0))
                    }
                }
                results.withLockedValue { $0.append(contentsOf: outcomes) }
                finished.leave()
            }
            thread.start()
        }
        finished.wait()
        return results.withLockedValue { $0 }
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
        /// The paced client's own CPU seconds while it offered the load (nil off Linux).
        var client_cpu_s: Double?

        var failures: Int { errors + non2xx }
    }

    /// `prefix` (``CPUPinning/clientPrefix``) runs it on the clients' CPU.
    static func run(prefix: [String], url: String, pairs: URL, sdkKey: String, rate: Double, seconds: Int, connections: Int, latencies: String? = nil) async throws -> Result {
        let command = prefix + [
            ChildServer.executable.path, "paced-client", "--url", url, "--pairs", pairs.path, "--sdk-key", sdkKey,
            "--rate", String(format: "%.3f", rate), "--seconds", "\(seconds)", "--connections", "\(connections)",
        ] + (latencies.map { ["--latencies", $0] } ?? [])
        let (status, output) = try await Tool.run(command)
        guard status == 0, let line = output.split(separator: "\n").last(where: { $0.hasPrefix("{\"requests\"") }) else {
            throw BenchError("paced client failed (exit \(status)): \(output)")
        }
        return try JSONDecoder().decode(Result.self, from: Data(line.utf8))
    }
}
