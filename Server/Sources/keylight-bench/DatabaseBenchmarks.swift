import ArgumentParser
import AsyncHTTPClient
import Foundation
import KeylightCore
import KeylightServer
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Validate and activate throughput on SQLite vs PostgreSQL, and on PostgreSQL with one vs
/// `--processes` server processes (the scale-out figure), in one run. Server processes are this
/// executable re-launched as `keylight-bench serve-child`; with several, wrk's threads are
/// spread over them. Each run also reports CPU per request: each server process's, and
/// PostgreSQL's (every `postgres` process on the machine) with its share of the total.
struct DatabaseBenchmarks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "databases", abstract: "SQLite vs PostgreSQL, 1 vs several processes (needs wrk and PostgreSQL).")

    @Option(help: "Seconds per wrk run.")
    var seconds = 8

    @Option(help: "Concurrent connections in all.")
    var connections = 64

    @Option(help: "Licenses (one active instance each) that validate cycles through.")
    var licenses = 1_000

    @Option(help: "Server processes sharing PostgreSQL in the scale-out run.")
    var processes = 3

    @Option(help: "PostgreSQL server URL (default: KEYLIGHT_DATABASE_URL or KEYLIGHT_TEST_POSTGRES_URL); a fresh database is created on it per run.")
    var postgresURL: String?

    func validate() throws {
        guard connections >= 1, seconds >= 1, licenses >= 1, processes >= 1 else {
            throw ValidationError("--connections, --seconds, --licenses and --processes must be at least 1")
        }
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let base = postgresURL ?? environment["KEYLIGHT_DATABASE_URL"] ?? environment["KEYLIGHT_TEST_POSTGRES_URL"] else {
            throw BenchError("no PostgreSQL URL: pass --postgres-url or set KEYLIGHT_TEST_POSTGRES_URL")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keylight-bench-db-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var logger = Logger(label: "keylight-bench")
        logger.logLevel = .critical
        let ledger = FailureLedger()

        var validateRate: [Int: Double] = [:]
        for (name, processes) in [("sqlite", 1), ("postgres", 1), ("postgres", max(2, self.processes))] {
            let target: [String]
            let database: Database
            if name == "sqlite" {
                let path = directory.appendingPathComponent("bench.sqlite").path
                target = ["--db", path]
                database = try await Database.sqlite(path: path, poolSize: 1, logger: logger)
                try await database.migrate(logger: logger)
            } else {
                let url = try await Database.createScratchDatabase(serverURL: base, prefix: "klbench_", logger: logger).url
                target = ["--database-url", url]
                database = try await Database.postgres(url: url, poolSize: 2, logger: logger)
                try await database.migrate(logger: logger)
            }
            var children: [ChildServer] = []
            for _ in 0..<processes { children.append(try await ChildServer.start(target + ["--key", Base64.encode([UInt8](repeating: 5, count: 32))])) }
            defer { children.forEach { $0.stop() } }
            let seeded = try await Seeder.seed(base: "http://127.0.0.1:\(children[0].port)", licenses: licenses, database: database, directory: directory, name: "\(name)-\(processes)")
            // One wrk whose threads are spread over the processes, so the percentiles come from
            // one histogram of every request rather than from per-process figures.
            let ports = children.map(\.port)
            let load = Wrk(threads: max(2, processes), connections: connections, seconds: seconds, directory: directory, ledger: ledger)
            // Across each wrk run: each process's CPU and requests served (from its metrics, so
            // seeding is not counted; a spread that left one idle would make the many-process
            // figure a one-process figure), and PostgreSQL's CPU.
            func measured(_ metric: String, _ run: () async throws -> Wrk.Result) async throws -> (Wrk.Result, [Double], [Int], Double) {
                var servedBefore: [Int] = []
                for port in ports { servedBefore.append(try await Self.served(port: port, metric: metric)) }
                let cpuBefore = children.map { ProcessCPU.seconds(pid: $0.process.processIdentifier) ?? 0 }
                let postgresBefore = ProcessCPU.seconds(command: "postgres")
                let result = try await run()
                let cpu = zip(children, cpuBefore).map { (ProcessCPU.seconds(pid: $0.process.processIdentifier) ?? 0) - $1 }
                let postgres = ProcessCPU.seconds(command: "postgres") - postgresBefore
                var served: [Int] = []
                for (port, before) in zip(ports, servedBefore) { served.append(try await Self.served(port: port, metric: metric) - before) }
                return (result, cpu, served, postgres)
            }
            let validate = try await measured("keylight_validations_total") {
                try await load.run(
                    url: "http://127.0.0.1:\(ports[0])/bench/app/validate", script: WrkScripts.spread(WrkScripts.validate, over: ports),
                    name: "validate-\(name)-\(processes)", arguments: [seeded.pairs.path, seeded.sdkKey, "", ""]
                )
            }
            let activate = try await measured("keylight_activations_total") {
                try await load.run(
                    url: "http://127.0.0.1:\(ports[0])/bench/app/activate", script: WrkScripts.spread(WrkScripts.activate, over: ports),
                    name: "activate-\(name)-\(processes)", arguments: [seeded.pairs.path, seeded.sdkKey]
                )
            }
            if name == "postgres" { validateRate[processes] = validate.0.requestsPerSecond }
            for (action, (result, servers, served, postgres)) in [("validate", validate), ("activate", activate)] {
                if served.contains(0) { ledger.record("\(action) \(name) x\(processes): a process served nothing (\(served))") }
                let requests = Double(max(result.requests, 1))
                let perProcess = zip(servers, served).map { cpu, count in String(format: "%.1f", cpu * 1e6 / Double(max(count, 1))) }
                let serverTotal = servers.reduce(0, +)
                let share = postgres / max(serverTotal + postgres, 1e-9)
                print(#"{"benchmark":"databases.\#(action)","database":"\#(name)","processes":\#(processes),"ops_per_sec":\#(String(format: "%.1f", result.requestsPerSecond)),"# +
                      #""p50_ms":\#(String(format: "%.3f", result.p50ms)),"p99_ms":\#(String(format: "%.3f", result.p99ms)),"requests":\#(result.requests),"served_per_process":\#(served),"# +
                      #""server_cpu_us_per_request":\#(String(format: "%.1f", serverTotal * 1e6 / requests)),"server_cpu_us_per_request_by_process":[\#(perProcess.joined(separator: ","))],"# +
                      #""postgres_cpu_us_per_request":\#(String(format: "%.1f", postgres * 1e6 / requests)),"postgres_cpu_share":\#(String(format: "%.3f", share)),"# +
                      #""errors":\#(result.errors),"non_2xx":\#(result.non2xx)}"#)
            }
            await database.close()
        }
        let scaled = max(2, processes)
        if let one = validateRate[1], let many = validateRate[scaled] {
            // On 2 cores expect no gain: the processes, wrk and PostgreSQL share the same cores.
            print(#"{"benchmark":"databases.scale_out","processes":\#(scaled),"validate_ops_per_sec_one":\#(String(format: "%.1f", one)),"# +
                  #""validate_ops_per_sec_many":\#(String(format: "%.1f", many)),"ratio":\#(String(format: "%.3f", many / one)),"cores":\#(System.coreCount)}"#)
        }
        try ledger.check("databases")
    }

    /// The sum of a counter's series on one server process (`/metrics`, Prometheus text).
    static func served(port: Int, metric: String) async throws -> Int {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics")
        request.method = .GET
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 22))
        return text.split(separator: "\n")
            .filter { $0.hasPrefix(metric + "{") || $0.hasPrefix(metric + " ") }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            .reduce(0) { $0 + Int($1) }
    }

}

/// `keylight-bench serve-child`: a server process for the databases and releases benchmarks.
struct ServeChild: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve-child", abstract: "A server process for `databases` and `releases` (internal).", shouldDisplay: false)

    @Option var db: String?
    @Option var databaseURL: String?
    @Option var key: String
    /// Where release files live; the releases benchmark points nginx at the same folder.
    @Option var artifactsDir: String?
    /// As `keylight serve --last-seen-gathering` (seconds; 0 writes last-seen times every flush).
    @Option var lastSeenGathering: Int?

    func run() async throws {
        var logger = Logger(label: "keylight-bench-child")
        logger.logLevel = .critical
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.databasePath = db
        configuration.databaseURL = databaseURL
        configuration.masterKey = key
        configuration.releases.artifactsDirectory = artifactsDir
        configuration.adminToken = "bench-token"
        configuration.limits = .unlimited
        configuration.poolSize = 8
        if let lastSeenGathering { configuration.validationTimes = .gathering(seconds: lastSeenGathering) }
        let server = try await buildApplication(configuration: configuration, logger: logger) { channel in
            // Unbuffered: the parent reads this line from a pipe while the server runs.
            FileHandle.standardOutput.write(Data("listening on \(channel.localAddress?.port ?? 0)\n".utf8))
        }
        try await server.application.runService()
    }
}

/// A child server process and its port.
final class ChildServer: @unchecked Sendable {
    // @unchecked: `process` is only signalled, and `port` set once before sharing.
    let process: Process
    let port: Int

    private init(process: Process, port: Int) {
        self.process = process
        self.port = port
    }

    /// This benchmark's own executable, which child servers (and the paced client) run.
    static var executable: URL {
        let named = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        return FileManager.default.isExecutableFile(atPath: named.path) ? named : (Bundle.main.executableURL ?? named)
    }

    /// `serve-child` with `arguments`, from `executable` (default: this one), under `wrapper`
    /// (default: KEYLIGHT_BENCH_CHILD_WRAPPER's words, if set); waits up to `waitSeconds` for it to listen.
    static func start(_ arguments: [String], executable: URL? = nil, wrapper: [String]? = nil, waitSeconds: Int = 20) async throws -> ChildServer {
        let process = Process()
        let binary = executable ?? Self.executable
        process.executableURL = binary
        process.arguments = ["serve-child"] + arguments
        // KEYLIGHT_BENCH_CHILD_WRAPPER runs the server under a tool, e.g.
        // "valgrind --tool=callgrind --callgrind-out-file=/tmp/keylight.%p.callgrind", to see where its time goes.
        let words = wrapper ?? (ProcessInfo.processInfo.environment["KEYLIGHT_BENCH_CHILD_WRAPPER"] ?? "").split(separator: " ").map(String.init)
        if !words.isEmpty {
            process.arguments = words + [binary.path] + ["serve-child"] + arguments
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        }
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = NIOLockedValueBox("")
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if !data.isEmpty { output.withLockedValue { $0 += String(decoding: data, as: UTF8.self) } }
        }
        for _ in 0..<(max(1, waitSeconds) * 20) {
            try await Task.sleep(for: .milliseconds(50))
            let text = output.withLockedValue { $0 }
            if let range = text.range(of: "listening on "), let port = Int(text[range.upperBound...].prefix { $0.isNumber }) {
                return ChildServer(process: process, port: port)
            }
            if !process.isRunning { throw BenchError("child server exited (status \(process.terminationStatus)) before listening: \(text)") }
        }
        process.terminate()
        throw BenchError("child server did not start: \(output.withLockedValue { $0 })")
    }

    func stop() {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }
}
