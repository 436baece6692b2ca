import NIOConcurrencyHelpers

/// What buffered writes could not reach the database by the end of shutdown: the operator is
/// told (log, exit status), because nothing else would ever show it.
public final class UnwrittenData: Sendable {
    public struct Counts: Sendable, Equatable {
        public var validationTimes = 0
        public var usageDays = 0
        public var keylessCheckIns = 0
        /// Devices' telemetry of a day (insights).
        public var deviceDays = 0
        public var isEmpty: Bool { validationTimes == 0 && usageDays == 0 && keylessCheckIns == 0 && deviceDays == 0 }
    }

    private let counts = NIOLockedValueBox(Counts())

    public init() {}

    public var current: Counts { counts.withLockedValue { $0 } }

    func record(_ batch: ActivityBuffer.Batch) {
        counts.withLockedValue { counts in
            counts.validationTimes += batch.times.count
            counts.usageDays += batch.usage.count
            counts.keylessCheckIns += batch.keyless.count
            counts.deviceDays += batch.devices.count
        }
    }
}
