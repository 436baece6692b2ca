import Foundation
import KeylightTestSupport

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

    /// Runs `keylight` with `arguments` to its end (off the concurrency pool: see ``ChildProcess``).
    @discardableResult
    static func run(_ arguments: [String], stdin: Data? = nil, limit: Duration = .seconds(120)) async throws -> Result {
        let output = try await ChildProcess.run(binary, arguments, stdin: stdin, limit: limit)
        return Result(
            status: output.status,
            stdout: String(decoding: output.stdout, as: UTF8.self),
            stderr: String(decoding: output.stderr, as: UTF8.self)
        )
    }
}

extension CLI {
    /// The package's root directory (this file is Tests/KeylightCLITests/CLI.swift).
    /// Runs a Python script of the package (`Tests/…/x.py`) with extra environment; a script
    /// that hangs is terminated after `limit` (and then fails on its status).
    static func python(_ script: String, environment extra: [String: String], limit: Duration) async throws -> (status: Int32, output: String) {
        let output = try await ChildProcess.python(packageRoot.appendingPathComponent(script).path, environment: extra, limit: limit)
        return (output.status, String(decoding: output.stdout, as: UTF8.self))
    }

    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
}


/// `../shared` beside the repository's root, one above this package's (or `KEYLIGHT_SHARED_DIR`).
enum Shared {
    static var leaseVectors: URL {
        let base = ProcessInfo.processInfo.environment["KEYLIGHT_SHARED_DIR"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("shared")
        return base.appendingPathComponent("conformance/keylight-lease-vectors.json")
    }

    static var hasLeaseVectors: Bool { FileManager.default.fileExists(atPath: leaseVectors.path) }
}
