import Foundation
import NIOConcurrencyHelpers

/// Runs wrk (Debian package `wrk`) against a URL and parses the JSON line its script prints.
struct Wrk {
    struct Result: Decodable {
        var requests: Int
        var duration_us: Int
        var errors: Int
        var non2xx: Int
        var p50_us: Int
        var p99_us: Int
        /// Responses that carried a response signature (counted only by scripts that look).
        var signed: Int

        /// Successful (2xx) requests per second: errors and other statuses are not work done.
        var requestsPerSecond: Double { Double(max(0, requests - non2xx)) / (Double(duration_us) / 1e6) }
        /// Socket errors and non-2xx answers.
        var failures: Int { errors + non2xx }
        var p50ms: Double { Double(p50_us) / 1000 }
        var p99ms: Double { Double(p99_us) / 1000 }
    }

    var threads = 2
    var connections: Int
    var seconds: Int
    var directory: URL
    /// Every run's failures, so a command can end non-zero when any figure counted one.
    var ledger = FailureLedger()
    /// The CPU wrk runs on (`taskset -c`; see ``CPUPinning``), or nil to leave it to the scheduler.
    var cpu: Int?

    /// One run, waited for on a thread of its own: the benchmark's tasks share the event loops
    /// with the server under test (as in `keylight serve`), and a loop blocked on wrk would stall
    /// the connections it serves.
    func run(url: String, script: String, name: String, arguments: [String] = []) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Swift.Result { try runBlocking(url: url, script: script, name: name, arguments: arguments) })
            }
        }
    }

    private func runBlocking(url: String, script: String, name: String, arguments: [String]) throws -> Result {
        let scriptURL = directory.appendingPathComponent("\(name).lua")
        try Data(script.utf8).write(to: scriptURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // The run's tag goes last: the scripts seed their threads from it.
        let tag = String(UUID().uuidString.prefix(8)).lowercased()
        // wrk refuses more threads than connections.
        let pinned: [String] = cpu.map { ["taskset", "-c", "\($0)"] } ?? []
        process.arguments = pinned + ["wrk", "-t\(min(threads, connections))", "-c\(connections)", "-d\(seconds)s", "--latency", "-s", scriptURL.path, url, "--"] + arguments + [tag]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.standardError
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0,
              let line = text.split(separator: "\n").last(where: { $0.hasPrefix("{\"requests\"") }) else {
            throw BenchError("wrk failed (is the Debian package wrk installed?): \(text)")
        }
        let result = try JSONDecoder().decode(Result.self, from: Data(line.utf8))
        if result.failures > 0 { ledger.record("\(name): \(result.errors) errors, \(result.non2xx) non-2xx of \(result.requests)") }
        return result
    }
}

/// Failures seen by the runs of one command (shared by copies of a ``Wrk``).
final class FailureLedger: Sendable {
    private let entries = NIOLockedValueBox<[String]>([])

    func record(_ entry: String) { entries.withLockedValue { $0.append(entry) } }

    /// Prints the failures and throws when there were any: a benchmark whose requests failed
    /// measured something other than what it names.
    func check(_ command: String) throws {
        let seen = entries.withLockedValue { $0 }
        guard !seen.isEmpty else { return }
        print(#"{"benchmark":"\#(command).failures","count":\#(seen.count)}"#)
        throw BenchError("\(command): requests failed, so the figures above are not clean: \(seen.joined(separator: "; "))")
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
