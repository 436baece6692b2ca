import Crypto
import Foundation
import KeylightCore

/// Slows repeated failed sign-ins down, by account and by address, with waits that double
/// instead of a lock: an attacker cannot keep the owner out. The right password with a valid
/// second factor goes through even while the account is slowed down; without one, the owner
/// waits at most ``maxDelay``.
struct LoginThrottle: Sendable {
    let database: Database
    /// Failures (every attempt counts until it succeeds) that pass without a wait.
    var freeAttempts = 4
    /// The longest wait: seconds.
    var maxDelay: Int64 = 300
    /// Failures older than this are forgotten.
    var memory: Int64 = 3_600

    /// Throttle keys: one per account (by the email typed, so unknown and known emails are slowed
    /// alike) and one per address.
    static func keys(email: String, address: String?) -> [String] {
        var keys = ["account:" + Hex.encode(SHA256.hash(data: Data(email.utf8)).prefix(16))]
        if let address { keys.append("address:" + address) }
        return keys
    }

    /// The wait after `failures` failures.
    func delay(afterFailures failures: Int) -> Int64 {
        guard failures > freeAttempts else { return 0 }
        let exponent = min(failures - freeAttempts - 1, 20)
        return min(Int64(1) << exponent, maxDelay)
    }

    /// The waits an attempt met: by account and by address (nil: none).
    struct Waits: Equatable {
        var account: Int64?
        var address: Int64?
        /// The longer wait, or nil when the attempt may go on.
        var longest: Int64? { [account, address].compactMap { $0 }.max() }
    }

    /// Counts an attempt on every key that is not waiting, and answers the waits met. The
    /// address key gets twice the free attempts (a shared office address).
    func begin(keys: [String], now: Int64) async throws -> Waits {
        var waits = Waits()
        for key in keys {
            let row = try await database.loginThrottle(key: key)
            let stale = row.map { now - $0.updatedAt > memory } ?? true
            let failures = stale ? 0 : row?.failures ?? 0
            var wait: Int64?
            if !stale, let next = row?.nextAllowedAt, next > now {
                wait = next - now
            } else {
                var throttle = self
                throttle.freeAttempts = key.hasPrefix("address:") ? freeAttempts * 2 : freeAttempts
                let counted = try await database.countLoginAttempt(
                    key: key, expectedFailures: row?.failures, failures: failures + 1,
                    nextAllowedAt: now + throttle.delay(afterFailures: failures + 1), now: now
                )
                if !counted { wait = 1 }
            }
            if key.hasPrefix("address:") { waits.address = wait } else { waits.account = wait }
        }
        return waits
    }

    /// A successful sign-in clears the account's count and takes its own attempt back from the
    /// address's, so colleagues behind one address are not slowed down by signing in.
    func succeeded(keys: [String]) async throws {
        try await database.clearLoginThrottle(keys: keys.filter { $0.hasPrefix("account:") })
        try await passed(keys: keys)
    }

    /// A step that passed (the password, before its second factor): the address's count goes
    /// back down by the attempt it took.
    func passed(keys: [String]) async throws {
        for key in keys where key.hasPrefix("address:") { try await database.uncountLoginAttempt(key: key) }
    }
}
