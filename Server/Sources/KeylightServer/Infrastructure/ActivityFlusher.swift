import Logging

/// Writes what ``ActivityBuffer`` holds: periodically (validation times as
/// ``ValidationTimesSchedule`` says), everything when asked, and everything once more at shutdown,
/// where what cannot be stored is counted in ``UnwrittenData``. One write at a time: a write
/// asked for waits for the periodic one in flight, so that when it returns everything buffered
/// before it was called is stored (or given back).
final class ActivityFlusher: Sendable {
    let buffer: ActivityBuffer
    let database: Database
    let schedule: ValidationTimesSchedule
    let unwritten: UnwrittenData
    let logger: Logger
    /// Validation times a transaction, beyond the first (which also holds the rest of the batch).
    let timesPerTransaction: Int
    private let turn = AsyncResourcePool<Void>([()])

    /// At 200 instances a statement, 25 statements: a few milliseconds of the writer's time. A
    /// busy server's gathered times can be hundreds of thousands, and one transaction for all of
    /// them would hold the writer (SQLite) or their rows (PostgreSQL) for seconds while
    /// activations wait.
    static let validationTimesPerTransaction = 5_000

    init(
        buffer: ActivityBuffer, database: Database, schedule: ValidationTimesSchedule, unwritten: UnwrittenData, logger: Logger,
        timesPerTransaction: Int = validationTimesPerTransaction
    ) {
        self.buffer = buffer
        self.database = database
        self.schedule = schedule
        self.unwritten = unwritten
        self.logger = logger
        self.timesPerTransaction = max(1, timesPerTransaction)
    }

    /// A periodic flush.
    func tick() async {
        try? await turn.withResource { _ in await write(buffer.drain(at: .now, times: schedule), final: false) }
    }

    /// Everything buffered, now.
    func writeAll(final: Bool) async {
        try? await turn.withResource { _ in await write(buffer.drain(), final: final) }
    }

    /// The batch in id order: everything but the times and the first chunk of them in one
    /// transaction, then a transaction per chunk. On a failure only what was not committed is
    /// given back (usage counts add up: written twice, they would count twice).
    private func write(_ batch: ActivityBuffer.Batch, final: Bool) async {
        guard !batch.isEmpty else { return }
        let ordered = batch.times.sorted { $0.key < $1.key }
        var committed = 0
        do {
            let first = ordered.prefix(timesPerTransaction)
            try await database.touchInstances(
                ordered: first, usage: batch.usage, keyless: batch.keyless, devices: batch.devices, instanceTelemetry: batch.instanceTelemetry
            )
            committed = first.endIndex
            while committed < ordered.endIndex {
                let chunk = ordered[committed..<min(committed + timesPerTransaction, ordered.endIndex)]
                try await database.touchInstances(ordered: chunk)
                committed = chunk.endIndex
            }
        } catch {
            var rest = ActivityBuffer.Batch()
            if committed == 0 {
                rest = batch
            } else {
                rest.times = Dictionary(uniqueKeysWithValues: ordered[committed...].map { ($0.key, $0.value) })
            }
            if final {
                unwritten.record(rest)
                logger.error("could not write buffered validation data at shutdown", metadata: [
                    "validation_times": .stringConvertible(rest.times.count), "usage_days": .stringConvertible(rest.usage.count),
                    "keyless_check_ins": .stringConvertible(rest.keyless.count), "device_days": .stringConvertible(rest.devices.count), "error": "\(error)",
                ])
                return
            }
            // Keep them for the next round rather than drop them.
            buffer.restore(rest)
            logger.debug("could not record validation times", metadata: ["error": "\(error)"])
        }
    }
}

extension PeriodicService {
    /// Runs `flusher` every `interval`, and writes everything once more at shutdown.
    static func flushing(_ flusher: ActivityFlusher, every interval: Duration) -> PeriodicService {
        PeriodicService(interval: interval, tick: { await flusher.tick() }, finish: { await flusher.writeAll(final: true) })
    }
}
