import Foundation
import KeylightCore
import NIOConcurrencyHelpers

/// Token-bucket rate limiting keyed by client address or license, in memory and per process.
///
/// Each key holds up to `burst` tokens, refilled at `count / seconds` per second. Several server
/// processes each keep their own buckets (documented in docs/operating/configuration.md): a client spread across N
/// processes by a load balancer gets up to N times the rate.
///
/// The table is bounded and every request costs O(1): buckets live in two generations, and when
/// the young one fills, the old one is dropped whole and the young one takes its place. A bucket
/// touched in either generation moves to the young one, so only keys unseen for a whole
/// generation (`maxKeys / 2` other keys) are forgotten, and a forgotten key comes back full, as
/// it would have after idling anyway.
public final class RateLimiter<Key: Hashable & Sendable>: Sendable {
    public typealias Limit = RateLimit
    public typealias Decision = RateLimitDecision

    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    private struct State {
        var young: [Key: Bucket] = [:]
        var old: [Key: Bucket] = [:]
    }

    public let limit: Limit
    private let state: NIOLockedValueBox<State>
    private let generationSize: Int
    /// The server's injected clock, so tests move time instead of waiting for it. A clock set
    /// back is harmless (refills never go negative); one set forward refills buckets once.
    private let clock: any WallClock

    public init(limit: Limit, maxKeys: Int = 100_000, clock: any WallClock = SystemWallClock()) {
        self.limit = limit
        self.clock = clock
        self.generationSize = max(1, maxKeys / 2)
        self.state = NIOLockedValueBox(State())
    }

    /// Takes one token for `key` now, by the limiter's clock.
    public func acquire(_ key: Key) -> Decision {
        acquire(key, now: clock.now.timeIntervalSince1970)
    }

    /// Takes one token for `key` at time `now` (seconds, any origin).
    public func acquire(_ key: Key, now: Double) -> Decision {
        guard !limit.isUnlimited else { return .allowed }
        let rate = limit.tokensPerSecond
        let capacity = Double(max(limit.burst, 1))
        var retired: [Key: Bucket] = [:]
        let decision = state.withLockedValue { state -> Decision in
            var bucket = state.young[key] ?? state.old.removeValue(forKey: key) ?? Bucket(tokens: capacity, updated: now)
            bucket.tokens = min(capacity, bucket.tokens + max(0, now - bucket.updated) * rate)
            bucket.updated = now
            let decision: Decision
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                decision = .allowed
            } else {
                decision = .limited(retryAfter: max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))))
            }
            if state.young[key] == nil, state.young.count >= generationSize {
                // Swap, and free the retired generation after the lock is released.
                retired = state.old
                state.old = state.young
                state.young = [:]
                state.young.reserveCapacity(generationSize)
            }
            state.young[key] = bucket
            return decision
        }
        _ = retired
        return decision
    }

    /// Buckets held now (both generations), for tests and metrics.
    var count: Int { state.withLockedValue { $0.young.count + $0.old.count } }
}

/// A limit: sustained requests per minute and the burst allowed above it.
public struct RateLimit: Sendable, Hashable {
    /// Tokens refilled per `seconds`.
    public var count: Int
    public var seconds: Int
    public var burst: Int

    public init(perMinute: Int, burst: Int) {
        self.init(count: perMinute, perSeconds: 60, burst: burst)
    }

    /// `count` per `seconds`: for limits slower than one a minute (a few mails an hour).
    public init(count: Int, perSeconds seconds: Int, burst: Int) {
        self.count = count
        self.seconds = max(1, seconds)
        self.burst = burst
    }

    /// No limit at all (benchmarks, tests).
    public static let unlimited = RateLimit(perMinute: 0, burst: 0)
    var isUnlimited: Bool { count <= 0 }
    var tokensPerSecond: Double { Double(count) / Double(seconds) }
}

/// The outcome of one request.
public enum RateLimitDecision: Equatable, Sendable {
    case allowed
    /// Refused; the client may retry after this many whole seconds (at least 1).
    case limited(retryAfter: Int)
}
