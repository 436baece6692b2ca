import Foundation

/// Runs a command-line tool through `env` (so it is found on PATH) and answers its exit status
/// (127: not installed) and standard output; its standard error goes to the benchmark's. Waited
/// for on a thread of its own, as ``Wrk`` and ``Curl`` wait: a task blocked on a process would
/// hold an event loop.
enum Tool {
    static func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Swift.Result { try runBlocking(arguments) })
            }
        }
    }

    /// Runs a tool that must succeed and answers its standard output; one that is not on PATH is
    /// named with the Debian package that has it.
    static func require(_ arguments: [String], package: String) async throws -> String {
        let (status, output) = try await run(arguments)
        if status == 127 { throw BenchError("\(arguments.first ?? "") is not installed (Debian package \(package))") }
        guard status == 0 else { throw BenchError("\(arguments.joined(separator: " ")) failed (exit \(status)): \(output)") }
        return output
    }

    private static func runBlocking(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.standardError
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
