import Foundation

/// Runs the built `keylight` binary, as a user or script would.
enum CLI {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The `keylight` binary beside the test bundle (SwiftPM puts products in one directory),
    /// or `KEYLIGHT_BIN`.
    static var binary: URL {
        if let override = ProcessInfo.processInfo.environment["KEYLIGHT_BIN"] {
            return URL(fileURLWithPath: override)
        }
        var directory = Bundle.main.bundleURL
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent("keylight")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        return Bundle.main.bundleURL.appendingPathComponent("keylight")
    }

    @discardableResult
    static func run(_ arguments: [String], stdin: Data? = nil) throws -> Result {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let input = Pipe()
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try input.fileHandleForWriting.close()
        // Read before waiting so a full pipe cannot deadlock the child.
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self)
        )
    }
}

extension CLI {
    /// The package's root directory (this file is Tests/KeylightCLITests/CLI.swift).
    /// Runs a Python script of the package (`Tests/…/x.py`) with extra environment; a script
    /// that hangs is terminated after `limit` (and then fails on its status).
    static func python(_ script: String, environment extra: [String: String], limit: Duration) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", packageRoot.appendingPathComponent(script).path]
        process.environment = ProcessInfo.processInfo.environment.merging(extra) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let watchdog = Task {
            try await Task.sleep(for: limit)
            if process.isRunning { process.terminate() }
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        watchdog.cancel()
        return (process.terminationStatus, text)
    }

    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
}

func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("keylight-cli-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// `../shared` beside the package root (or `KEYLIGHT_SHARED_DIR`).
enum Shared {
    static var leaseVectors: URL {
        let base = ProcessInfo.processInfo.environment["KEYLIGHT_SHARED_DIR"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared")
        return base.appendingPathComponent("conformance/keylight-lease-vectors.json")
    }

    static var hasLeaseVectors: Bool { FileManager.default.fileExists(atPath: leaseVectors.path) }
}
