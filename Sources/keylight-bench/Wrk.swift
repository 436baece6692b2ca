import Foundation

/// Runs wrk (Debian package `wrk`) against a URL and parses the JSON line its script prints.
struct Wrk {
    struct Result: Decodable {
        var requests: Int
        var duration_us: Int
        var errors: Int
        var non2xx: Int
        var p50_us: Int
        var p99_us: Int

        var requestsPerSecond: Double { Double(requests) / (Double(duration_us) / 1e6) }
        var p50ms: Double { Double(p50_us) / 1000 }
        var p99ms: Double { Double(p99_us) / 1000 }
    }

    var threads = 2
    var connections: Int
    var seconds: Int
    var directory: URL

    func run(url: String, script: String, name: String, arguments: [String] = []) throws -> Result {
        let scriptURL = directory.appendingPathComponent("\(name).lua")
        try Data(script.utf8).write(to: scriptURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["wrk", "-t\(threads)", "-c\(connections)", "-d\(seconds)s", "--latency", "-s", scriptURL.path, url] + (arguments.isEmpty ? [] : ["--"] + arguments)
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
        return try JSONDecoder().decode(Result.self, from: Data(line.utf8))
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
