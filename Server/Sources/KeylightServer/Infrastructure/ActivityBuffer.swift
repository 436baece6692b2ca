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
/// these into one transaction a second keeps validate a pure read. A crash can lose at most the
/// last second of this telemetry; graceful shutdown flushes it.
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
        var batch = Batch()
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
            if (state.batch.times[instanceId] ?? .min) < time { state.batch.times[instanceId] = time }
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

    func drain() -> Batch {
        state.withLockedValue { state in
            defer { state.batch = Batch() }
            return state.batch
        }
    }

    func restore(_ batch: Batch) {
        state.withLockedValue { state in
            var pending = state.batch
            defer { state.batch = pending }
            for (id, time) in batch.times where (pending.times[id] ?? .min) < time { pending.times[id] = time }
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

extension PeriodicService {
    /// Writes buffered validation times, usage counts and keyless check-ins every `interval`,
    /// and once more at shutdown; what that last write cannot store is counted in `unwritten`.
    static func flushing(_ buffer: ActivityBuffer, to database: Database, every interval: Duration, unwritten: UnwrittenData, logger: Logger) -> PeriodicService {
        @Sendable func flush(final: Bool) async {
            let batch = buffer.drain()
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
        return PeriodicService(interval: interval, tick: { await flush(final: false) }, finish: { await flush(final: true) })
    }
}
