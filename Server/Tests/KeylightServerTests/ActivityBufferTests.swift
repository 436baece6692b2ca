import Testing
@testable import KeylightServer

/// What the write-behind buffer queues for `device_days` and the instance's telemetry columns:
/// each device once a day unless what it sends changes, and never nothing after its memory fills.
@Suite struct ActivityBufferTests {
    private let macOS15 = Telemetry(appVersion: "1.0", platform: "macOS", osVersion: "15.1")

    private func validate(_ buffer: ActivityBuffer, _ instance: String, day: Int64, _ telemetry: Telemetry) {
        buffer.validated(instanceId: instance, tenantId: "t", productId: "p", at: day * 86_400 + 3_600, telemetry: telemetry)
    }

    @Test func aDeviceIsQueuedOnceADayWhileWhatItSendsStaysTheSame() {
        let buffer = ActivityBuffer()
        validate(buffer, "i1", day: 20_000, macOS15)
        let first = buffer.drain()
        #expect(first.devices.keys.map(\.instanceId) == ["i1"])
        #expect(first.instanceTelemetry["i1"] == macOS15)
        let validatedAt: Int64 = 20_000 * 86_400 + 3_600
        #expect(first.times["i1"] == validatedAt)

        validate(buffer, "i1", day: 20_000, macOS15)
        let again = buffer.drain()
        #expect(again.devices.isEmpty, "the same day and telemetry were queued already")
        #expect(again.instanceTelemetry.isEmpty)
        #expect(again.times["i1"] != nil, "the validation time is written every time")

        validate(buffer, "i1", day: 20_001, macOS15)
        let nextDay = buffer.drain()
        #expect(nextDay.devices[InstanceDay(instanceId: "i1", day: 20_001)] != nil)
        #expect(nextDay.instanceTelemetry.isEmpty, "a new day alone leaves the instance's columns as they are")

        var updated = macOS15
        updated.appVersion = "1.1"
        validate(buffer, "i1", day: 20_001, updated)
        let changed = buffer.drain()
        #expect(changed.devices[InstanceDay(instanceId: "i1", day: 20_001)]?.telemetry == updated)
        #expect(changed.instanceTelemetry["i1"] == updated)
    }

    @Test func anInstanceThatSendsNothingCostsNoTelemetryWrite() {
        let buffer = ActivityBuffer()
        validate(buffer, "i1", day: 20_000, Telemetry())
        let batch = buffer.drain()
        #expect(batch.devices.count == 1)
        #expect(batch.instanceTelemetry.isEmpty)
    }

    @Test func instancesAreToldApartAndAFullMemoryStartsAgain() {
        let buffer = ActivityBuffer(maxRecorded: 3)
        for instance in ["a", "b", "c"] { validate(buffer, instance, day: 20_000, macOS15) }
        #expect(buffer.drain().devices.count == 3)
        for instance in ["a", "b", "c"] { validate(buffer, instance, day: 20_000, macOS15) }
        #expect(buffer.drain().devices.isEmpty, "all three are remembered")
        // A fourth fills the memory: it starts again, so the others are written once more, not lost.
        validate(buffer, "d", day: 20_000, macOS15)
        for instance in ["a", "b"] { validate(buffer, instance, day: 20_000, macOS15) }
        #expect(Set(buffer.drain().devices.keys.map(\.instanceId)) == ["d", "a", "b"])
    }

    @Test func theMemoryHoldsFingerprintsNotSightings() {
        // What keeps a million devices within the default's 50 MB.
        #expect(MemoryLayout<ActivityBuffer.Memory.Key>.stride + MemoryLayout<ActivityBuffer.Memory.Value>.stride == 24)
        #expect(ActivityBuffer().maxRecorded >= 1_000_000)
    }

    /// Many devices at once: their validation times wait for the gathering or the cap, while the
    /// rest of the batch is written at every flush; a few are written at every flush.
    @Test func aBusyServersValidationTimesAreGathered() {
        let schedule = ValidationTimesSchedule(eagerAtMost: 2, gathering: .seconds(30), maxPending: 6)
        let buffer = ActivityBuffer()
        let start = ContinuousClock.now
        for instance in ["a", "b"] { validate(buffer, instance, day: 20_000, macOS15) }
        #expect(buffer.drain(at: start, times: schedule).times.count == 2, "two waiting: written at once")

        for instance in ["a", "b", "c"] { validate(buffer, instance, day: 20_001, macOS15) }
        let held = buffer.drain(at: start + .seconds(1), times: schedule)
        #expect(held.times.isEmpty, "three waiting: held back")
        #expect(held.usage.values.map(\.validations) == [3], "the usage counts are not held back")
        #expect(held.devices.count == 3)
        #expect(buffer.pendingTimes == 3)

        validate(buffer, "d", day: 20_001, macOS15)
        #expect(buffer.drain(at: start + .seconds(30), times: schedule).times.isEmpty, "29 s after the flush that held them back")
        let gathered = buffer.drain(at: start + .seconds(31), times: schedule)
        #expect(gathered.times.keys.sorted() == ["a", "b", "c", "d"], "30 s after it")
        #expect(gathered.usage.isEmpty)
        #expect(buffer.pendingTimes == 0)

        for instance in ["e", "f", "g"] { validate(buffer, instance, day: 20_001, macOS15) }
        #expect(buffer.drain(at: start + .seconds(32), times: schedule).times.isEmpty)
        for instance in ["h", "i", "j"] { validate(buffer, instance, day: 20_001, macOS15) }
        #expect(buffer.drain(at: start + .seconds(33), times: schedule).times.count == 6, "the cap writes them however young")

        for instance in ["k", "l", "m"] { validate(buffer, instance, day: 20_001, macOS15) }
        #expect(buffer.drain(at: start + .seconds(34), times: schedule).times.isEmpty)
        #expect(buffer.drain().times.count == 3, "a write asked for (and shutdown's) takes every waiting time")
    }

    /// Times a failed write gives back stay the newest of each instance's, and are due at the
    /// next flush (they waited their turn already).
    @Test func heldTimesSurviveAFailedWrite() {
        let schedule = ValidationTimesSchedule(eagerAtMost: 0, gathering: .seconds(30), maxPending: 100)
        let buffer = ActivityBuffer()
        buffer.validated(instanceId: "a", tenantId: "t", productId: "p", at: 100)
        let failed = buffer.drain()
        buffer.validated(instanceId: "a", tenantId: "t", productId: "p", at: 90)
        buffer.validated(instanceId: "b", tenantId: "t", productId: "p", at: 95)
        buffer.restore(failed)
        #expect(buffer.drain(at: .now, times: schedule).times == ["a": 100, "b": 95])
        buffer.validated(instanceId: "c", tenantId: "t", productId: "p", at: 101)
        #expect(buffer.drain(at: .now, times: schedule).times.isEmpty, "held back as usual once those are written")
    }

    @Test func theScheduleWritesNothingWhenNothingWaits() {
        #expect(!ValidationTimesSchedule().isDue(pending: 0, waited: .seconds(3_600)))
        #expect(ValidationTimesSchedule.everyFlush.isDue(pending: 1_000_000, waited: .zero))
        #expect(ValidationTimesSchedule().isDue(pending: 256, waited: .zero))
        #expect(!ValidationTimesSchedule().isDue(pending: 257, waited: .seconds(29)))
    }
}
