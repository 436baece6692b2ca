import Foundation
import NIOConcurrencyHelpers

/// A small in-process cache whose entries expire after `ttl` seconds, for data that changes
/// rarely and may be a few seconds stale (products, signed configs). Several processes each
/// keep their own; the TTL bounds how long one lags another's change.
final class TTLCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let entries = NIOLockedValueBox<[Key: (value: Value, expires: Double)]>([:])
    private let ttl: Double
    private let capacity: Int

    init(ttl: Double, capacity: Int = 10_000) {
        self.ttl = ttl
        self.capacity = capacity
    }

    func value(for key: Key, now: Double = ProcessInfo.processInfo.systemUptime) -> Value? {
        entries.withLockedValue { entries in
            guard let entry = entries[key] else { return nil }
            if entry.expires < now {
                entries[key] = nil
                return nil
            }
            return entry.value
        }
    }

    func set(_ value: Value, for key: Key, now: Double = ProcessInfo.processInfo.systemUptime) {
        entries.withLockedValue { entries in
            if entries.count >= capacity { entries = entries.filter { $0.value.expires >= now } }
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = (value, now + ttl)
        }
    }

    func remove(_ key: Key) {
        _ = entries.withLockedValue { $0.removeValue(forKey: key) }
    }
}
