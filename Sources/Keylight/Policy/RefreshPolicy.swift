import Foundation

/// When to talk to the server: refresh when the last refresh is older than `staleAfter` or the
/// lease ends within `leaseExpiryWindow`, never more often than `debounce`, with a refresh
/// scheduled `leadBeforeExpiry` before the lease ends; after transient failures, retry with
/// exponential backoff, jitter and the server's `Retry-After`.
public struct RefreshPolicy: Sendable, Hashable {
    public var debounce: Int64 = 300
    public var staleAfter: Int64 = 6 * 3_600
    public var leaseExpiryWindow: Int64 = 24 * 3_600
    public var leadBeforeExpiry: Int64 = 3_600
    /// Keyless beacons at most this often.
    public var beaconInterval: Int64 = 24 * 3_600
    public var backoffBase: Double = 30
    public var backoffCap: Double = 3_600
    /// Seconds between reads of a secure store that is locked at launch (the Keychain before the
    /// device's first unlock since boot).
    public var lockedStoreRetry: Double = 15

    public init() {}

    func isDue(lastRefresh: Int64?, lastAttempt: Int64?, leaseExpiresAt: Int64?, now: Int64) -> Bool {
        if let lastAttempt, now - lastAttempt < debounce, now >= lastAttempt { return false }
        guard let lastRefresh else { return true }
        if now - lastRefresh > staleAfter { return true }
        if let leaseExpiresAt, leaseExpiresAt - now < leaseExpiryWindow { return true }
        return false
    }

    /// When the next refresh should happen on its own: before the lease ends or when it goes stale.
    func nextRefresh(lastRefresh: Int64?, leaseExpiresAt: Int64?, now: Int64) -> Int64 {
        var candidates = [(lastRefresh ?? now) + staleAfter]
        if let leaseExpiresAt { candidates.append(leaseExpiresAt - leadBeforeExpiry) }
        return max(now + debounce, candidates.min()!)
    }

    /// How often a floating seat is renewed: 30 s before its heartbeat runs out, or at half of a
    /// heartbeat of a minute or less (a slow network must not cost the seat).
    static func heartbeatInterval(_ heartbeat: Int) -> Int64 {
        let heartbeat = Int64(min(max(heartbeat, 10), 86_400))
        return heartbeat > 60 ? heartbeat - 30 : heartbeat / 2
    }

    /// A floating seat is renewed every ``heartbeatInterval(_:)`` (the debounce does not apply: the
    /// server frees seats that miss it), or at once when there is no seat; attempts are at least
    /// 5 s apart (less for the shortest heartbeats).
    func isHeartbeatDue(lastRefresh: Int64?, lastAttempt: Int64?, heartbeat: Int, holdsSeat: Bool, now: Int64) -> Bool {
        let interval = Self.heartbeatInterval(heartbeat)
        if let lastAttempt, now >= lastAttempt, now - lastAttempt < min(debounce, 5, interval / 2) { return false }
        guard holdsSeat, let lastRefresh, now >= lastRefresh else { return true }
        return now - lastRefresh >= interval
    }

    /// After a failed renewal: the usual backoff, but at most 30 s (or half the interval, for short
    /// heartbeats), so a seat is renewed before it lapses when the server comes back, and a lapsed
    /// one shows as `.limited` soon after; never sooner than the server's `Retry-After`.
    func heartbeatRetryDelay(backoff: Double, retryAfter: Int?, heartbeat: Int) -> Double {
        let ceiling = min(30, Double(Self.heartbeatInterval(heartbeat)) / 2)
        return max(min(backoff, ceiling), Double(retryAfter ?? 0), 1)
    }

    /// Seconds to wait before retry number `attempt` (1, 2, …): a random point in the upper half of
    /// `min(cap, base·2^(attempt-1))`, never less than the server's `Retry-After`.
    func backoff(attempt: Int, retryAfter: Int?, using generator: inout some RandomNumberGenerator) -> Double {
        let ceiling = min(backoffCap, backoffBase * pow(2, Double(max(0, attempt - 1))))
        let jittered = Double.random(in: (ceiling / 2)...ceiling, using: &generator)
        return max(jittered, Double(retryAfter ?? 0))
    }
}
