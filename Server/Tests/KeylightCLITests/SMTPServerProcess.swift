import Foundation
import KeylightTestSupport
import NIOConcurrencyHelpers

/// aiosmtpd (PyPI) as a child process: AUTH required, optionally STARTTLS with a certificate of
/// its own CA, every accepted message in a folder (Tests/Mail/smtp_server.py).
final class SMTPServerProcess: Sendable {
    let process: Process
    let port: Int
    /// The CA that signed the STARTTLS certificate (nil without STARTTLS).
    let caFile: String?
    let folder: URL
    static let user = "keylight"
    static let password = "s3cret-pass"

    /// Whether python3 can import aiosmtpd and cryptography (.ci/run installs them).
    static let available: Bool = {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import aiosmtpd, cryptography"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()

    init(folder: URL, port: Int = 0, starttls: Bool = false, extra: [String] = []) async throws {
        self.folder = folder
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", CLI.packageRoot.appendingPathComponent("Tests/Mail/smtp_server.py").path,
                             "--folder", folder.path, "--user", Self.user, "--password", Self.password, "--port", String(port)]
            + (starttls ? ["--starttls"] : []) + extra
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let output = PipeCollector(out)
        self.process = process
        var ready: [Substring]?
        for _ in 0..<300 where ready == nil && process.isRunning {
            try await Task.sleep(for: .milliseconds(50))
            if let line = output.text.split(separator: "\n").first(where: { $0.hasPrefix("ready ") }) {
                ready = line.split(separator: " ")
            }
        }
        guard let ready, ready.count >= 2, let port = Int(ready[1]) else {
            if process.isRunning { process.terminate() }
            throw ServerProcessError(output: "aiosmtpd did not start: \(output.text)")
        }
        self.port = port
        self.caFile = ready.count > 2 ? String(ready[2]) : nil
    }

    /// The received messages' files, oldest first.
    func messages() -> [URL] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".eml") }.sorted()
            .map { folder.appendingPathComponent($0) }
    }

    /// The envelope aiosmtpd recorded beside a message.
    func envelope(_ message: URL) throws -> [String: Any] {
        let url = message.deletingPathExtension().appendingPathExtension("json")
        return try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] ?? [:]
    }

    /// Waits until `count` messages have arrived (or `limit`), answering those there are.
    func waitForMessages(_ count: Int, limit: Duration = .seconds(20)) async throws -> [URL] {
        let deadline = ContinuousClock.now + limit
        while messages().count < count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        return messages()
    }

    func stop() async {
        kill(process.processIdentifier, SIGTERM)
        for _ in 0..<200 where process.isRunning { try? await Task.sleep(for: .milliseconds(25)) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// A received message as Python's email parser reads it (Tests/Mail/read_mail.py).
    static func read(_ message: URL) async throws -> [String: Any] {
        let output = try await ChildProcess.python(CLI.packageRoot.appendingPathComponent("Tests/Mail/read_mail.py").path, [message.path], mergeStandardError: false)
        guard output.status == 0, let object = try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any] else {
            throw ServerProcessError(output: "read_mail.py failed: \(String(decoding: output.stderr, as: UTF8.self))")
        }
        return object
    }
}
