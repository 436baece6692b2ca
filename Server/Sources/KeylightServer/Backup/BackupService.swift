import Foundation
import KeylightCore
import Logging
import ServiceLifecycle

/// When and where `keylight serve` backs its SQLite database up by itself.
public struct BackupSchedule: Sendable, Equatable {
    /// The folder the backups go to (created 0700 if missing).
    public var directory: String
    public var interval: Duration
    /// How many backups are kept; older ones are deleted after each new one.
    public var keep: Int

    public init(directory: String, interval: Duration, keep: Int) {
        self.directory = directory
        self.interval = interval
        self.keep = keep
    }

    /// `keylight-20261124T221500Z.sqlite`: sorts by time, one per second at most.
    static func fileName(at seconds: Int64) -> String {
        let date = Date(timeIntervalSince1970: TimeInterval(seconds))
        // UTC, as ISO 8601's basic format writes it (the style leaves the zone out: it is always UTC here).
        let stamp = date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false).dateSeparator(.omitted).timeSeparator(.omitted))
        return "keylight-\(stamp)Z.sqlite"
    }

    static func isBackupName(_ name: String) -> Bool {
        name.hasPrefix("keylight-") && name.hasSuffix(".sqlite") && name.utf8.count == "keylight-20261124T221500Z.sqlite".utf8.count
    }
}

/// Takes a backup at start and then every `schedule.interval`, keeping the newest
/// `schedule.keep`. A failed backup is logged, counted (`keylight_backups_total{result="failed"}`)
/// and retried sooner (1 min, doubling up to the interval); it never stops the server.
struct BackupService: Service {
    let database: Database
    let schedule: BackupSchedule
    let clock: any WallClock
    let metrics: ServerMetrics
    let logger: Logger

    static let firstRetry: Duration = .seconds(60)

    func run() async throws {
        var wait: Duration = .zero
        var retry = Self.firstRetry
        while !Task.isShuttingDownGracefully {
            do {
                let pause = wait
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: pause) }
            } catch {
                break
            }
            if await backUpOnce() {
                wait = schedule.interval
                retry = Self.firstRetry
            } else {
                wait = min(retry, schedule.interval)
                retry = min(retry * 2, schedule.interval)
            }
        }
    }

    /// One backup and the rotation after it; false when it failed.
    func backUpOnce() async -> Bool {
        let started = ContinuousClock.now
        do {
            try FileManager.default.createDirectory(atPath: schedule.directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let path = URL(fileURLWithPath: schedule.directory).appendingPathComponent(BackupSchedule.fileName(at: clock.unixSeconds)).path
            try await Backups.write(database, to: path, replacing: true)
            let removed = try rotate()
            metrics.recordBackup("succeeded")
            logger.info("backup written", metadata: [
                "path": .string(path), "seconds": .stringConvertible((ContinuousClock.now - started).components.seconds),
                "removed_old": .stringConvertible(removed),
            ])
            return true
        } catch {
            metrics.recordBackup("failed")
            logger.error("backup failed; retrying", metadata: ["directory": .string(schedule.directory), "error": "\(error)"])
            return false
        }
    }

    /// Deletes all but the newest `keep` backups in the folder (its other files are left alone).
    func rotate() throws -> Int {
        let names = try FileManager.default.contentsOfDirectory(atPath: schedule.directory).filter(BackupSchedule.isBackupName).sorted()
        let old = names.dropLast(max(1, schedule.keep))
        for name in old { try FileManager.default.removeItem(atPath: URL(fileURLWithPath: schedule.directory).appendingPathComponent(name).path) }
        return old.count
    }
}
