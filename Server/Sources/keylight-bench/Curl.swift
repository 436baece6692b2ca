import Foundation

/// Runs curl (Debian package `curl`): a client in a process of its own, so what it spends is
/// neither the server's CPU nor its memory, and one that streams to `/dev/null` without holding
/// a download in memory.
enum Curl {
    /// One download's outcome as curl reports it.
    struct Transfer: Sendable {
        /// curl's exit status (0: done; 28: the time limit; 7: no connection).
        var exitStatus: Int32
        /// The HTTP status (0 when no answer came).
        var status: Int
        var bytes: Int64
        /// Bytes per second over the whole transfer (`%{speed_download}`).
        var bytesPerSecond: Double

        /// A whole `length`-byte file answered 200.
        func isComplete(length: Int64) -> Bool { exitStatus == 0 && status == 200 && bytes == length }
    }

    /// Downloads `url` to `/dev/null`.
    static func download(_ url: String, maxSeconds: Int) async throws -> Transfer {
        let (exitStatus, output) = try await run(["-s", "-o", "/dev/null", "--max-time", "\(maxSeconds)", "-w", "%{http_code} %{size_download} %{speed_download}", url])
        let fields = output.split(separator: " ")
        guard fields.count == 3, let status = Int(fields[0]), let bytes = Int64(fields[1]), let rate = Double(fields[2]) else {
            throw BenchError("curl \(url): unexpected output \(output.debugDescription) (exit \(exitStatus))")
        }
        return Transfer(exitStatus: exitStatus, status: status, bytes: bytes, bytesPerSecond: rate)
    }

    /// PUTs the file at `path` as a stream (curl's `-T` reads it as it sends, so a large file is
    /// never whole in memory); answers the HTTP status and the response body.
    static func upload(_ path: String, to url: String, headers: [String], maxSeconds: Int) async throws -> (status: Int, body: String) {
        // An empty `Expect:` drops curl's `100-continue`, which would wait a second for an
        // interim answer before sending.
        let arguments = ["-sS", "-T", path, "-H", "Expect:", "--max-time", "\(maxSeconds)", "-w", "\n%{http_code}"] + headers.flatMap { ["-H", $0] } + [url]
        let (exitStatus, output) = try await run(arguments)
        guard exitStatus == 0, let newline = output.lastIndex(of: "\n"), let status = Int(output[output.index(after: newline)...]) else {
            throw BenchError("curl upload to \(url) failed (exit \(exitStatus)): \(output)")
        }
        return (status, String(output[..<newline]))
    }

    /// Runs curl and answers its exit status and standard output (``Tool/run(_:)``: waited for on
    /// a thread of its own).
    static func run(_ arguments: [String]) async throws -> (Int32, String) {
        let (status, output) = try await Tool.run(["curl"] + arguments)
        // env's own status when it finds no curl.
        if status == 127 { throw BenchError("curl is not installed (Debian package curl)") }
        return (status, output)
    }
}
