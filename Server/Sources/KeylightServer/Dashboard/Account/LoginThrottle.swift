import Crypto
import Foundation
import KeylightCore

/// Slows repeated failed sign-ins down, by account and by address, with waits that double
/// instead of a lock: an attacker cannot keep the owner out. The right password with a valid
/// second factor goes through even while the account is slowed down, and a browser that signed
/// in before has a count of its own (``DeviceCookie``), so a guesser elsewhere cannot keep the
/// owner out.
struct LoginThrottle: Sendable {
    let database: Database
    /// Failures (every attempt counts until it succeeds) that pass without a wait.
    var freeAttempts = 4
    /// The longest wait: seconds.
    var maxDelay: Int64 = 300
    /// Failures older than this are forgotten.
    var memory: Int64 = 3_600

    /// Throttle keys: one per account (by the email typed, so unknown and known emails are slowed
    /// alike) and one per address. A browser that signed in to the account before (its device
    /// cookie, ``DeviceCookie``) has a key of its own instead of the account's: someone
    /// hammering the account from elsewhere does not slow the owner's own browser down.
    static func keys(email: String, address: String?, device: String? = nil) -> [String] {
        var keys = [device.map { "device:" + $0 } ?? "account:" + Hex.encode(SHA256.hash(data: Data(email.utf8)).prefix(16))]
        if let address { keys.append("address:" + address) }
        return keys
    }

    /// The key that counts second-factor codes tried while the account is slowed down.
    static func codeKey(email: String) -> String {
        "code:" + Hex.encode(SHA256.hash(data: Data(email.utf8)).prefix(16))
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

    /// Answers the waits an attempt meets, and counts it on every key when none is waiting (an
    /// attempt that waits counts nowhere, so a guesser cannot keep the wait going from one
    /// address). The address key gets twice the free attempts (a shared office address).
    func begin(keys: [String], now: Int64) async throws -> Waits {
        var waits = Waits()
        var rows: [(key: String, failures: Int, expected: Int?)] = []
        for key in keys {
            let row = try await database.loginThrottle(key: key)
            let stale = row.map { now - $0.updatedAt > memory } ?? true
            if !stale, let next = row?.nextAllowedAt, next > now {
                if key.hasPrefix("address:") { waits.address = next - now } else { waits.account = next - now }
            }
            rows.append((key, stale ? 0 : row?.failures ?? 0, row?.failures))
        }
        guard waits.longest == nil else { return waits }
        for row in rows {
            var throttle = self
            throttle.freeAttempts = row.key.hasPrefix("address:") ? freeAttempts * 2 : freeAttempts
            let counted = try await database.countLoginAttempt(
                key: row.key, expectedFailures: row.expected, failures: row.failures + 1,
                nextAllowedAt: now + throttle.delay(afterFailures: row.failures + 1), now: now
            )
            if !counted {
                // Another attempt counted first: this one waits a moment, as if slowed down.
                if row.key.hasPrefix("address:") { waits.address = 1 } else { waits.account = 1 }
            }
        }
        return waits
    }

    /// A successful sign-in clears the account's count and takes its own attempt back from the
    /// address's, so colleagues behind one address are not slowed down by signing in.
    func succeeded(keys: [String]) async throws {
        try await database.clearLoginThrottle(keys: keys.filter { !$0.hasPrefix("address:") })
        try await passed(keys: keys)
    }

    /// A step that passed (the password, before its second factor): the address's count goes
    /// back down by the attempt it took.
    func passed(keys: [String]) async throws {
        for key in keys where key.hasPrefix("address:") { try await database.uncountLoginAttempt(key: key) }
    }
}
