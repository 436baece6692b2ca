import KeylightCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
@testable import KeylightServer
import SQLKit
import Testing

/// The write-behind flush: a periodic flush holds a busy server's validation times back, a
/// gathered batch goes a chunk of times a transaction, and a chunk that fails gives back only
/// what was not committed.
@Suite(.timeLimit(.minutes(6))) struct ActivityFlusherTests {
    typealias Statements = ActivityFlushStatementsTests
    typealias Conformance = StorageConformanceTests

    /// Each instance validated once, at `now` + its index; the product's usage counted.
    private static func validated(_ ids: [String]) -> ActivityBuffer {
        let buffer = ActivityBuffer()
        for (index, id) in ids.enumerated() {
            buffer.validated(instanceId: id, tenantId: "acme", productId: "app", at: Conformance.now + Int64(index))
        }
        return buffer
    }

    private static func flusher(_ buffer: ActivityBuffer, _ database: Database, schedule: ValidationTimesSchedule = ValidationTimesSchedule(),
                                unwritten: UnwrittenData = UnwrittenData()) -> ActivityFlusher {
        ActivityFlusher(buffer: buffer, database: database, schedule: schedule, unwritten: unwritten, logger: Logger(label: "flusher-test"), timesPerTransaction: 100)
    }

    private static func storedTimes(_ opened: Database) async throws -> [Int64?] {
        try await opened.sql.raw("SELECT last_validated_at FROM instances ORDER BY id").all(decodingColumn: "last_validated_at", as: Int64?.self)
    }

    /// How many instances (in id order) hold the time ``validated(_:)`` gave them.
    private static func written(_ opened: Database) async throws -> Int {
        try await storedTimes(opened).enumerated().filter { $0.element == Conformance.now + Int64($0.offset) }.count
    }

    private static func validations(_ opened: Database) async throws -> Int {
        try await opened.sql.raw("SELECT CAST(COALESCE(SUM(validations), 0) AS BIGINT) AS n FROM usage_daily").first(decodingColumn: "n", as: Int.self) ?? -1
    }

    @Test(arguments: StorageBackend.available.filter { $0 != .sqliteFile })
    func aGatheredBatchGoesAChunkOfTimesATransaction(backend: StorageBackend) async throws {
        try await backend.with { opened in
            let ids = try await Statements.instances(opened)
            let log = StatementLog()
            await Self.flusher(Self.validated(ids), Statements.counting(opened, backend, log)).writeAll(final: false)

            // One transaction for everything else and the first chunk, then one per chunk.
            let shape = log.statements.compactMap { statement -> String? in
                if statement == "COMMIT" { return "commit" }
                if statement.contains("last_validated_at") { return "times" }
                if statement.contains("usage_daily") { return "usage" }
                return nil
            }
            #expect(shape == ["times", "usage", "commit", "times", "commit", "times", "commit"], "\(shape)")
            #expect(try await Self.storedTimes(opened) == ids.indices.map { Conformance.now + Int64($0) })
            #expect(try await Self.validations(opened) == ids.count)
        }
    }

    /// The second chunk fails: the first transaction (usage counts included) stays committed,
    /// and only the later times are given back, due at the next flush.
    @Test(arguments: StorageBackend.available.filter { $0 != .sqliteFile })
    func aFailedChunkGivesBackOnlyWhatWasNotCommitted(backend: StorageBackend) async throws {
        try await backend.with { opened in
            let ids = try await Statements.instances(opened)
            let buffer = Self.validated(ids)
            let failing = Database(sql: FailingSQLDatabase(base: opened.sql, failOnTimeStatement: 2), driver: backend == .postgres ? .postgres : .sqlite, close: {})
            await Self.flusher(buffer, failing).writeAll(final: false)
            #expect(buffer.pendingTimes == ids.count - 100)
            #expect(try await Self.written(opened) == 100)

            let schedule = ValidationTimesSchedule(eagerAtMost: 0, gathering: .seconds(3_600), maxPending: 1_000_000)
            await Self.flusher(buffer, opened, schedule: schedule).tick()
            #expect(buffer.pendingTimes == 0, "given back after waiting their turn: written at the next flush")
            #expect(try await Self.storedTimes(opened) == ids.indices.map { Conformance.now + Int64($0) })
            #expect(try await Self.validations(opened) == ids.count, "usage counted once")
        }
    }

    /// At shutdown the same failure counts only the times that were not written.
    @Test func aFailedChunkAtShutdownCountsOnlyWhatWasNotWritten() async throws {
        try await StorageBackend.sqliteMemory.with { opened in
            let ids = try await Statements.instances(opened)
            let unwritten = UnwrittenData()
            let failing = Database(sql: FailingSQLDatabase(base: opened.sql, failOnTimeStatement: 3), driver: .sqlite, close: {})
            await Self.flusher(Self.validated(ids), failing, unwritten: unwritten).writeAll(final: true)
            #expect(unwritten.current == UnwrittenData.Counts(validationTimes: ids.count - 200))
            #expect(try await Self.validations(opened) == ids.count)
        }
    }

    /// A periodic flush follows the schedule: many waiting times are held back, the usage
    /// counts are not.
    @Test func aPeriodicFlushHoldsManyTimesBack() async throws {
        try await StorageBackend.sqliteMemory.with { opened in
            let ids = try await Statements.instances(opened)
            let buffer = Self.validated(ids)
            await Self.flusher(buffer, opened, schedule: ValidationTimesSchedule(eagerAtMost: 100)).tick()
            #expect(buffer.pendingTimes == ids.count)
            #expect(try await Self.written(opened) <= 1, "only the first instance's time, that of its activation")
            #expect(try await Self.validations(opened) == ids.count)
        }
    }
}

/// A database whose `failOnTimeStatement`-th statement writing validation times fails.
private struct FailingSQLDatabase: SQLDatabaseWrapper {
    let base: any SQLDatabase
    let failOnTimeStatement: Int
    private let seen: NIOLockedValueBox<Int>

    init(base: any SQLDatabase, failOnTimeStatement: Int) {
        self.base = base
        self.failOnTimeStatement = failOnTimeStatement
        seen = NIOLockedValueBox(0)
    }

    private init(base: any SQLDatabase, failOnTimeStatement: Int, sharing other: FailingSQLDatabase) {
        self.base = base
        self.failOnTimeStatement = failOnTimeStatement
        seen = other.seen
    }

    private func fails(_ query: any SQLExpression) -> Bool {
        guard base.serialize(query).sql.contains("last_validated_at") else { return false }
        return seen.withLockedValue { count in
            count += 1
            return count == failOnTimeStatement
        }
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> ()) -> EventLoopFuture<Void> {
        fails(query) ? base.eventLoop.makeFailedFuture(TestFailure("failed on purpose")) : base.execute(sql: query, onRow)
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> ()) async throws {
        if fails(query) { throw TestFailure("failed on purpose") }
        try await base.execute(sql: query, onRow)
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        try await base.withSession { session in try await closure(FailingSQLDatabase(base: session, failOnTimeStatement: failOnTimeStatement, sharing: self)) }
    }
}
