import Foundation

// platform: child processes exist on macOS and Linux only (not on iOS, tvOS, watchOS or visionOS).
#if os(macOS) || os(Linux)

/// Runs a child process to its end without holding a Swift concurrency thread.
///
/// Foundation's `waitUntilExit` and `readDataToEndOfFile` block the calling thread. Called from a
/// test, that thread is one of the cooperative pool's (as many as cores: two on CI), so two CLI
/// runs at once stalled every other suite's servers and clients for the length of the run, and
/// timing tests elsewhere failed. Here the blocking happens on Dispatch threads outside the pool.
public enum ChildProcess {
    public struct Output: Sendable {
        public var status: Int32
        public var stdout: Data
        public var stderr: Data
        /// Whether the process was still running at the time limit (and was then terminated).
        public var timedOut: Bool
    }

    /// Starts `executable` with `arguments`, writes `stdin` (then closes it), and answers its exit
    /// status and output. A process still running after `limit` is sent SIGTERM, then SIGKILL
    /// 5 s later. With `mergeStandardError` the child's standard error goes to `stdout` too.
    public static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil, stdin: Data? = nil,
        mergeStandardError: Bool = false, limit: Duration = .seconds(120)
    ) async throws -> Output {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe()
        let err = Pipe()
        let input = Pipe()
        process.standardOutput = out
        process.standardError = mergeStandardError ? out : err
        process.standardInput = input
        try process.run()
        let box = ProcessBox(process)
        let watchdog = Task {
            try await Task.sleep(for: limit)
            box.expire()
        }
        defer { watchdog.cancel() }
        async let stdout = readToEnd(out.fileHandleForReading)
        async let stderr = mergeStandardError ? Data() : readToEnd(err.fileHandleForReading)
        if let stdin { try? input.fileHandleForWriting.write(contentsOf: stdin) }
        try? input.fileHandleForWriting.close()
        // Read before waiting, so a full pipe cannot deadlock the child.
        let (outData, errData) = await (stdout, stderr)
        let status = await box.exitStatus()
        return Output(status: status, stdout: outData, stderr: errData, timedOut: box.expired)
    }

    /// `python3 <script> <arguments>` (through /usr/bin/env), with `environment` added to this
    /// process's environment.
    public static func python(
        _ script: String, _ arguments: [String] = [], environment extra: [String: String] = [:], mergeStandardError: Bool = true,
        limit: Duration = .seconds(120)
    ) async throws -> Output {
        try await run(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", script] + arguments,
            environment: ProcessInfo.processInfo.environment.merging(extra) { $1 }, mergeStandardError: mergeStandardError, limit: limit
        )
    }

    private static func readToEnd(_ handle: FileHandle) async -> Data {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: handle.readDataToEndOfFile())
            }
        }
    }
}

/// A running process shared by the waiter and the watchdog.
private final class ProcessBox: @unchecked Sendable {
    // @unchecked: Process is not Sendable; its isRunning/terminate/waitUntilExit are thread-safe,
    // and `expiredFlag` is only touched under `lock`.
    private let process: Process
    private let lock = NSLock()
    private var expiredFlag = false

    init(_ process: Process) { self.process = process }

    var expired: Bool { lock.withLock { expiredFlag } }

    func expire() {
        guard process.isRunning else { return }
        lock.withLock { expiredFlag = true }
        process.terminate()
        let pid = process.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + 5) {
            if self.process.isRunning { kill(pid, SIGKILL) }
        }
    }

    func exitStatus() async -> Int32 {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                self.process.waitUntilExit()
                continuation.resume(returning: self.process.terminationStatus)
            }
        }
    }
}
#endif
