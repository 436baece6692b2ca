import Logging
import NIOConcurrencyHelpers

/// One product's day (UTC) in the usage counts.
struct UsageDay: Hashable, Sendable {
    var tenantId: String
    var productId: String
    /// Days since 1970-01-01 UTC.
    var day: Int64
}

/// Successful activations and validations counted for one ``UsageDay``.
struct UsageCount: Sendable, Equatable {
    var activations = 0
    var validations = 0

    static func += (lhs: inout UsageCount, rhs: UsageCount) {
        lhs.activations += rhs.activations
        lhs.validations += rhs.validations
    }
}

/// What the SDK paths record but need not write at once: validation times ("last seen") and
/// the per-day usage counts the dashboard charts. Validation is the hottest path; batching
/// these into one flush a second keeps validate a pure read. A busy server's validation times
/// are gathered for longer (``ValidationTimesSchedule``) and written 5,000 a transaction. A
/// crash can lose what was not written yet: the last second of this telemetry, and on a busy server up to the last 30 s of
/// validation times; graceful shutdown flushes it all.
///
/// Keyless installs (trial and free-tier check-ins, authorised by the public SDK key alone) are
/// buffered here too: repeated check-ins of one install cost one row write per flush, and a
/// flood of made-up instance ids fills at most ``maxPendingKeyless`` entries per flush interval
/// (the rest are dropped: a real install checks in again on its next launch).
final class ActivityBuffer: Sendable {
    struct Batch: Sendable {
        var times: [String: Int64] = [:]
        var usage: [UsageDay: UsageCount] = [:]
        var keyless: [KeylessInstall: KeylessSighting] = [:]
        /// Instances whose telemetry or day changed since they were last written, by instance and
        /// day (a device seen either side of midnight within one flush is seen on both days).
        var devices: [InstanceDay: DeviceSighting] = [:]
        /// Instances whose latest telemetry changed, to write on the instance itself.
        var instanceTelemetry: [String: Telemetry] = [:]
        var isEmpty: Bool { times.isEmpty && usage.isEmpty && keyless.isEmpty && devices.isEmpty && instanceTelemetry.isEmpty }
    }

    /// What the buffer remembers of each instance it queued.
    typealias Memory = [RecordedInstance: RecordedSighting]

    /// What is pending, and each instance's sighting as last queued: an instance that validates
    /// all day with the same app costs one `device_days` write that day, not one per flush.
    fileprivate struct State {
        /// Everything but the validation times, which are held apart (``ValidationTimesSchedule``).
        var batch = Batch()
        var times: [String: Int64] = [:]
        /// The flush that first held the waiting times back (nil when none are held back).
        var timesHeldSince: ContinuousClock.Instant?
        /// Times a failed write gave back, which had waited their turn already: due at the next flush.
        var timesOverdue = false
        var recorded: Memory = [:]
    }

    /// Keyless check-ins held between two flushes, at most.
    let maxPendingKeyless: Int
    /// Instances remembered as recorded, at most; past it the memory starts again (costing one
    /// more write per instance, never a lost one). An entry is 24 bytes (two fingerprints and a
    /// day), so the default's table (2²¹ slots, as a dictionary keeps at most 3/4 full) is 50 MB:
    /// 1.5 million devices seen every day are each written once a day. Whole sightings (184
    /// bytes and the id's own allocation) were kept for 200,000 in about twice that, and past that
    /// every validate of a million devices wrote its `device_days` row again.
    let maxRecorded: Int
    private let state = NIOLockedValueBox(State())

    init(maxPendingKeyless: Int = 10_000, maxRecorded: Int = 1_500_000) {
        self.maxPendingKeyless = maxPendingKeyless
        self.maxRecorded = maxRecorded
    }

    /// A keyless check-in; false when the buffer is full and it was dropped.
    @discardableResult
    func sawKeyless(_ install: KeylessInstall, _ sighting: KeylessSighting) -> Bool {
        state.withLockedValue { state in
            if let earlier = state.batch.keyless[install] {
                if earlier.at <= sighting.at { state.batch.keyless[install] = sighting.merged(after: earlier) }
                return true
            }
            guard state.batch.keyless.count < maxPendingKeyless else { return false }
            state.batch.keyless[install] = sighting
            return true
        }
    }

    /// A successful validation: the instance's last-seen time, the product's count and the
    /// device's telemetry, under one lock (the hot path).
    func validated(instanceId: String, tenantId: String, productId: String, at time: Int64, telemetry: Telemetry = Telemetry()) {
        let day = time.flooringDivided(by: 86_400)
        let key = UsageDay(tenantId: tenantId, productId: productId, day: day)
        state.withLockedValue { state in
            if (state.times[instanceId] ?? .min) < time { state.times[instanceId] = time }
            state.batch.usage[key, default: UsageCount()] += UsageCount(validations: 1)
            state.sighted(instanceId, DeviceSighting(tenantId: tenantId, productId: productId, day: day, telemetry: telemetry), limit: maxRecorded)
        }
    }

    /// A successful activation, counted for the product's day at `time`; with the app's
    /// telemetry, the device is seen that day too.
    func activated(tenantId: String, productId: String, at time: Int64, instanceId: String? = nil, telemetry: Telemetry? = nil) {
        let day = time.flooringDivided(by: 86_400)
        let key = UsageDay(tenantId: tenantId, productId: productId, day: day)
        state.withLockedValue { state in
            state.batch.usage[key, default: UsageCount()] += UsageCount(activations: 1)
            if let instanceId, let telemetry {
                state.sighted(instanceId, DeviceSighting(tenantId: tenantId, productId: productId, day: day, telemetry: telemetry), limit: maxRecorded)
            }
        }
    }

    /// A re-activation of an instance the app already held: seen, not counted again.
    func reactivated(tenantId: String, productId: String, at time: Int64, instanceId: String, telemetry: Telemetry) {
        let sighting = DeviceSighting(tenantId: tenantId, productId: productId, day: time.flooringDivided(by: 86_400), telemetry: telemetry)
        state.withLockedValue { state in state.sighted(instanceId, sighting, limit: maxRecorded) }
    }

    /// Everything buffered, validation times included (shutdown, and writes asked for).
    func drain() -> Batch {
        state.withLockedValue { state in
            defer { state.batch = Batch() }
            state.takeTimes()
            return state.batch
        }
    }

    /// What a periodic flush at `now` writes: everything but the validation times, and those too
    /// when `schedule` says they are due.
    func drain(at now: ContinuousClock.Instant, times schedule: ValidationTimesSchedule) -> Batch {
        state.withLockedValue { state in
            defer { state.batch = Batch() }
            let heldSince = state.timesHeldSince ?? now
            if state.timesOverdue || schedule.isDue(pending: state.times.count, waited: now - heldSince) {
                state.takeTimes()
            } else if !state.times.isEmpty {
                state.timesHeldSince = heldSince
            }
            return state.batch
        }
    }

    /// Validation times waiting to be written.
    var pendingTimes: Int { state.withLockedValue { $0.times.count } }

    func restore(_ batch: Batch) {
        state.withLockedValue { state in
            var pending = state.batch
            defer { state.batch = pending }
            for (id, time) in batch.times where (state.times[id] ?? .min) < time { state.times[id] = time }
            if !batch.times.isEmpty { state.timesOverdue = true }
            for (key, count) in batch.usage { pending.usage[key, default: UsageCount()] += count }
            for (id, sighting) in batch.devices where pending.devices[id] == nil { pending.devices[id] = sighting }
            for (id, telemetry) in batch.instanceTelemetry where pending.instanceTelemetry[id] == nil { pending.instanceTelemetry[id] = telemetry }
            for (install, sighting) in batch.keyless {
                if let newer = pending.keyless[install] {
                    pending.keyless[install] = newer.merged(after: sighting)
                } else if pending.keyless.count < maxPendingKeyless {
                    pending.keyless[install] = sighting
                }
            }
        }
    }
}

extension ActivityBuffer.State {
    /// Moves the waiting validation times into the batch: a swap under the lock every validate
    /// takes, not a copy of up to ``ValidationTimesSchedule/maxPending`` entries. The batch's own
    /// times are always empty here (only this fills them, and every drain starts a new batch).
    mutating func takeTimes() {
        swap(&batch.times, &times)
        timesHeldSince = nil
        timesOverdue = false
    }

    /// Queues the instance's sighting unless the same one (day and telemetry) was queued before.
    /// The instance's own row is written only when what it sent changed: a new instance that
    /// sends nothing (its columns are empty already) or the same values on a new day costs none.
    mutating func sighted(_ instanceId: String, _ sighting: DeviceSighting, limit: Int) {
        let key = RecordedInstance(instanceId)
        let now = RecordedSighting(sighting)
        let earlier = recorded[key]
        guard earlier != now else { return }
        if recorded.count >= limit { recorded.removeAll(keepingCapacity: true) }
        recorded[key] = now
        batch.devices[InstanceDay(instanceId: instanceId, day: sighting.day)] = sighting
        if earlier.map({ $0.telemetry != now.telemetry }) ?? (sighting.telemetry != Telemetry()) {
            batch.instanceTelemetry[instanceId] = sighting.telemetry
        }
    }
}

/// An instance in ``ActivityBuffer``'s memory of what it queued: its id's 64-bit hash, not the
/// id. Instance ids are random values the server made, and `Hasher` is seeded anew in every
/// process, so two ids of one process share a fingerprint with odds of about n²/2⁶⁵ (a
/// million instances: 1 in 37 million); if they did, whichever of the two sent the same as the
/// other last did would go unwritten (its `device_days` row, and a new instance's telemetry
/// columns) until the memory starts again: insights one device short on those days.
struct RecordedInstance: Hashable, Sendable {
    let fingerprint: Int

    init(_ instanceId: String) { fingerprint = instanceId.hashValue }
}

/// A sighting as ``ActivityBuffer`` remembers it: its day, and a fingerprint of its product and
/// telemetry (the rest of ``DeviceSighting``).
struct RecordedSighting: Equatable, Sendable {
    let day: Int64
    let telemetry: Int

    init(_ sighting: DeviceSighting) {
        day = sighting.day
        var hasher = Hasher()
        hasher.combine(sighting.tenantId)
        hasher.combine(sighting.productId)
        hasher.combine(sighting.telemetry)
        telemetry = hasher.finalize()
    }
}

/// One instance on one day.
struct InstanceDay: Hashable, Sendable {
    var instanceId: String
    var day: Int64
}

/// One keyless install of one product.
struct KeylessInstall: Hashable, Sendable {
    var tenantId: String
    var productId: String
    var instanceId: String
}

/// The latest check-in of a keyless install.
struct KeylessSighting: Sendable, Equatable {
    var state: String
    var machineHash: String?
    var at: Int64
    var telemetry = Telemetry()

    /// A known install's check-in is stored again only after this long, unless its state
    /// changed (protocol 6.8); one inside the window is answered and not written.
    static let storeInterval: Int64 = 6 * 3_600

    /// A check-in that says the install is, or was, on a trial (`expired`: its trial ran out).
    static func startsTrial(_ state: String) -> Bool { state == "trial" || state == "expired" }

    /// This (later) sighting, keeping an earlier machine hash when this one has none.
    func merged(after earlier: KeylessSighting) -> KeylessSighting {
        KeylessSighting(state: state, machineHash: machineHash ?? earlier.machineHash, at: max(at, earlier.at), telemetry: telemetry)
    }
}

extension Int64 {
    /// Division rounding towards negative infinity (days before 1970 stay on their own day).
    func flooringDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
