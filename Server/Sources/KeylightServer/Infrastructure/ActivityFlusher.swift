import Logging

/// Writes what ``ActivityBuffer`` holds: periodically (validation times as
/// ``ValidationTimesSchedule`` says), everything when asked, and everything once more at shutdown,
/// where what cannot be stored is counted in ``UnwrittenData``.
final class ActivityFlusher: Sendable {
    let buffer: ActivityBuffer
    let database: Database
    let schedule: ValidationTimesSchedule
    let unwritten: UnwrittenData
    let logger: Logger

    init(buffer: ActivityBuffer, database: Database, schedule: ValidationTimesSchedule, unwritten: UnwrittenData, logger: Logger) {
        self.buffer = buffer
        self.database = database
        self.schedule = schedule
        self.unwritten = unwritten
        self.logger = logger
    }

    /// A periodic flush.
    func tick() async {
        await write(buffer.drain(at: .now, times: schedule), final: false)
    }

    /// Everything buffered, now.
    func writeAll(final: Bool) async {
        await write(buffer.drain(), final: final)
    }

    private func write(_ batch: ActivityBuffer.Batch, final: Bool) async {
        guard !batch.isEmpty else { return }
        do {
            try await database.touchInstances(batch.times, usage: batch.usage, keyless: batch.keyless, devices: batch.devices, instanceTelemetry: batch.instanceTelemetry)
        } catch {
            if final {
                unwritten.record(batch)
                logger.error("could not write buffered validation data at shutdown", metadata: [
                    "validation_times": .stringConvertible(batch.times.count), "usage_days": .stringConvertible(batch.usage.count),
                    "keyless_check_ins": .stringConvertible(batch.keyless.count), "device_days": .stringConvertible(batch.devices.count), "error": "\(error)",
                ])
                return
            }
            // Keep them for the next round rather than drop them.
            buffer.restore(batch)
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
