import ArgumentParser
import Foundation
import KeylightServer
import Logging

/// How long the operator's backup tools take on a catalogue of `--licenses` licenses: an online
/// backup of a serving database (VACUUM INTO), its verification, and a restore.
struct BackupBenchmarks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "backup", abstract: "Time backup, verify and restore of a SQLite catalogue.")

    @Option(help: "Licenses in the catalogue.")
    var licenses = 100_000

    @Option(help: "Of those, licenses with an active instance (seeded through the API).")
    var active = 1_000

    func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keylight-bench-backup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var logger = Logger(label: "keylight-bench")
        logger.logLevel = .critical
        let server = try await BenchServer.start(name: "backup", activeLicenses: min(active, licenses), totalLicenses: licenses, poolSize: 4, directory: directory)
        defer { server.stop() }
        let clock = ContinuousClock()
        let backup = directory.appendingPathComponent("copy.sqlite").path
        let start = clock.now
        try await Backups.write(server.database, to: backup)
        let backedUp = clock.now - start
        let verifyStart = clock.now
        let summary = try await Backups.verify(backup, logger: logger)
        let verified = clock.now - verifyStart
        let restoreStart = clock.now
        _ = try await Backups.restore(from: backup, to: directory.appendingPathComponent("restored.sqlite").path,
                                      masterKeyPath: directory.appendingPathComponent("backup.sqlite.master-key").path, logger: logger)
        let restored = clock.now - restoreStart
        let size = (try? FileManager.default.attributesOfItem(atPath: backup)[.size] as? Int) ?? 0
        func seconds(_ duration: Duration) -> String { String(format: "%.3f", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18) }
        print(#"{"benchmark":"backup","licenses":\#(summary.counts["licenses"] ?? 0),"instances":\#(summary.counts["instances"] ?? 0),"bytes":\#(size),"#
              + #""backup_s":\#(seconds(backedUp)),"verify_s":\#(seconds(verified)),"restore_s":\#(seconds(restored))}"#)
    }
}
