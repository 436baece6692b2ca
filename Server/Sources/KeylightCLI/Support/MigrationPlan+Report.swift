import KeylightServer

extension MigrationPlan {
    /// What `keylight migrate --dry-run` prints, one line each.
    var report: [String] {
        var lines: [String] = []
        if let unknown = unknown.first {
            lines.append("refused: the database has \(unknown), which this build does not know: a newer Keylight migrated it.")
            lines.append("Downgrades are not supported: run the newer release, or restore the backup taken before the upgrade.")
            return lines
        }
        let state = applied.last.map { "database is at \($0) (\(applied.count) applied)" } ?? "new database (no migrations applied)"
        guard !pending.isEmpty else { return [state + "; nothing to apply"] }
        lines.append(state + "; \(pending.count) pending:")
        let width = pending.map(\.name.count).max() ?? 0
        for migration in pending {
            let verdict = migration.isSafeBesideOlderProcesses ? "safe while older processes run" : "UNSAFE while older processes run: stop them first"
            let name = migration.name.padding(toLength: width, withPad: " ", startingAt: 0)
            lines.append("  \(name)  \(verdict)" + (migration.note.map { ": \($0)" } ?? ""))
        }
        if applied.isEmpty {
            lines.append("A new database: no older process can be serving it, so every migration runs at once.")
        } else {
            lines.append(isSafeBesideOlderProcesses
                ? "Every pending migration only adds: the previous release's processes keep serving while the new ones migrate and start."
                : "At least one pending migration needs every older process stopped before it runs.")
        }
        return lines
    }
}
