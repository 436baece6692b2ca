/// What `migrate` would do to a database, read without writing (`keylight migrate --dry-run`).
public struct MigrationPlan: Sendable, Equatable {
    /// The migrations recorded in the database, in the order applied.
    public var applied: [String]
    /// The migrations this build would apply, in order.
    public var pending: [PendingMigration]
    /// Recorded migrations this build does not know: a newer release migrated the database, and
    /// this build refuses to run on it.
    public var unknown: [String]

    /// The plan of a database that does not exist yet: every migration, nothing applied.
    public static func forNewDatabase() -> MigrationPlan {
        MigrationPlan(applied: [], pending: Migration.all.map { PendingMigration(name: $0.name, safety: $0.safety) }, unknown: [])
    }

    /// True when every pending migration leaves processes of the previous release working.
    public var isSafeBesideOlderProcesses: Bool { pending.allSatisfy(\.isSafeBesideOlderProcesses) }

    /// True when older processes must be stopped before migrating: a pending migration is a
    /// contract, on a database some release already serves (a new one has no older processes).
    public var needsOlderProcessesStopped: Bool { !applied.isEmpty && !isSafeBesideOlderProcesses }
}

/// One migration `migrate` would apply, and what processes of the previous release do beside it.
public struct PendingMigration: Sendable, Equatable {
    public var name: String
    /// Adds only, so processes of the previous release keep serving while and after it runs.
    public var isSafeBesideOlderProcesses: Bool
    /// What older processes do not know about until replaced, or why they must stop first.
    public var note: String?

    init(name: String, safety: MigrationSafety) {
        self.name = name
        switch safety {
        case .expand(let caveat):
            isSafeBesideOlderProcesses = true
            note = caveat
        case .contract(let reason):
            isSafeBesideOlderProcesses = false
            note = reason
        }
    }
}
