import Foundation
import KeylightCore

/// Decides the license state from what is stored, offline. Most specific wins:
///
/// 1. the clock reads more than an hour before the server's time at the last verified contact → `invalid`
/// 2. a license the server explicitly refused → `invalid`
/// 3. a license with a verified, current lease → by the lease: `active` → `licensed`, or
///    `limited` when this build was released after the updates the lease's signed
///    `updates-until:` date covers; `fallback` → `limited`, `expired` → `expired` (the server's
///    word beats local expiry)
///    A license not validated online for longer than the configured maximum → `expired`.
/// 4. a license whose lease is missing, untrusted or for another key/instance → `invalid`;
///    whose lease ran out while offline → `expired`. A floating license without a live seat
///    (given back at quit, or not renewed within its heartbeat) → `limited` until it gets one again.
/// 5. no license: the trial (length from the verified config, else the seed) → `trial(daysLeft)`
/// 6. trial over and a verified config with the free tier on → `freeTier`
/// 7. otherwise → `expired` (a free tier is never granted without a signed config)
struct LicenseResolver: Sendable {
    var tenantId: String
    var productId: String
    var trustedKeys: Keyset
    var trialDaysSeed: Int
    /// This build's release date (Unix seconds), for "updates until" licenses; nil = no bound.
    var appReleaseDate: Int64? = nil
    /// What `limited` grants.
    var fallbackEntitlements: [String] = []
    /// A license not validated online for longer than this (seconds since the server issued the
    /// lease kept) resolves `expired` until the server is reached again; nil = no such cap.
    /// Licenses activated offline (response files) are exempt: they never reach the server.
    var maxOfflineSeconds: Int64? = nil
    /// Whether the free tier applies before a verified config says (see ``Configuration/freeTierSeed``).
    var freeTierSeed = false

    struct Resolution: Equatable, Sendable {
        var state: LicenseState
        var entitlements: [String]
        /// Why, for logs and `status` output.
        var reason: String
        /// Why, for the app's interface (nil while licensed or in a trial).
        var detail: LicenseState.Reason? = nil
    }

    static let rollbackTolerance: Int64 = 3_600

    /// True when `now` is more than the tolerance before the server time of the last verified contact.
    static func isClockManipulated(serverSeen: Int64?, now: Int64) -> Bool {
        guard let serverSeen else { return false }
        return now < serverSeen - rollbackTolerance
    }

    func resolve(_ stored: PersistedState, now: Int64) -> Resolution {
        if Self.isClockManipulated(serverSeen: stored.serverSeen, now: now) {
            return Resolution(state: .invalid, entitlements: [], reason: "clock set back before the last server contact", detail: .clockSetBack)
        }
        if let key = stored.licenseKey {
            if let rejection = stored.rejection {
                return Resolution(state: .invalid, entitlements: [], reason: "refused by the server (\(rejection))", detail: .refusal(rejection))
            }
            if stored.lease == nil, stored.awaitingVerifiedLease == true {
                return Resolution(state: .expired, entitlements: [], reason: "waiting for a verified response from the server", detail: .awaitingVerification)
            }
            if stored.floatingHeartbeat != nil, !stored.holdsSeat {
                return limited("floating license: no seat held; one is taken when the server is reached", .noFloatingSeat)
            }
            guard let lease = stored.lease, stored.instanceId == lease.instanceId,
                  LicenseKey.hash(normalizing: key) == lease.licenseKeyHash else {
                return Resolution(state: .invalid, entitlements: [], reason: "no lease for this license", detail: .tampered)
            }
            let verification = lease.verify(with: trustedKeys, now: now)
            guard verification.isTrusted else {
                return Resolution(state: .invalid, entitlements: [], reason: verification.kidKnown ? "lease signature invalid" : "lease signed by an unknown key", detail: .tampered)
            }
            if stored.floatingHeartbeat != nil, lease.status != .expired,
               verification.expired || Self.floatingSeatLapsed(lease, receivedAt: stored.leaseReceivedAt, now: now) {
                return limited("floating license: the seat was not renewed within its heartbeat", .noFloatingSeat)
            }
            if verification.expired {
                return Resolution(state: .expired, entitlements: [], reason: "lease expired; the server has not been reached since", detail: .leaseExpiredOffline)
            }
            if let cap = maxOfflineSeconds, stored.offlineActivation != true, lease.status != .expired, now - lease.issuedAt > cap {
                return Resolution(state: .expired, entitlements: [], reason: "not validated online for more than \(cap / 86_400) days", detail: .offlineTooLong(days: Int(cap / 86_400)))
            }
            switch lease.status {
            case .active:
                if let until = UpdatesEntitlement.date(in: lease.entitlements), let release = appReleaseDate, release > until {
                    return limited("this build (released \(Self.day(release))) is newer than the updates this license covers (until \(Self.day(until)))", .updatesEnded(until: Date(timeIntervalSince1970: TimeInterval(until))))
                }
                return Resolution(state: .licensed, entitlements: UpdatesEntitlement.removing(from: lease.entitlements), reason: "current lease")
            case .fallback: return limited("fallback lease", .fallbackAccess)
            case .expired: return Resolution(state: .expired, entitlements: [], reason: "license expired", detail: .licenseExpired)
            }
        }
        let config = trustedConfig(stored.config)
        // Clamped so a corrupt store or config cannot overflow: 100 years is longer than any trial.
        let trialDays = Int64(min(max(config?.trialDurationDays ?? trialDaysSeed, 0), 36_500))
        let started = min(max(stored.trialStartedAt ?? now, now - 36_500 * 86_400), now)
        let trialEnd = started + trialDays * 86_400
        if trialEnd > now {
            let daysLeft = Int((trialEnd - now + 86_399) / 86_400)
            return Resolution(state: .trial(daysLeft: daysLeft), entitlements: [], reason: "trial")
        }
        if config?.freeTierEnabled ?? freeTierSeed {
            return Resolution(state: .freeTier, entitlements: [], reason: "trial over; free tier", detail: .trialOver)
        }
        return Resolution(state: .expired, entitlements: [], reason: config == nil ? "trial over; product config never verified" : "trial over", detail: .trialOver)
    }

    /// The trial alone, whatever the license: not started (no launch yet), running, or over.
    func trialStatus(_ stored: PersistedState, now: Int64) -> TrialStatus {
        guard let startedAt = stored.trialStartedAt else { return .notStarted }
        let trialDays = Int64(min(max(trustedConfig(stored.config)?.trialDurationDays ?? trialDaysSeed, 0), 36_500))
        let started = min(max(startedAt, now - 36_500 * 86_400), now)
        let trialEnd = started + trialDays * 86_400
        return trialEnd > now ? .active(daysLeft: Int((trialEnd - now + 86_399) / 86_400)) : .expired
    }

    /// Seconds a device clock may step back (an NTP correction) before a kept floating lease is
    /// taken as lapsed.
    static let floatingClockTolerance: Int64 = 60

    /// A floating seat's lease is held for its own length (`expiresAt - issuedAt`) from when it
    /// arrived by this device's clock, so neither clock skew nor the protocol's 300 s grace keeps a
    /// seat the server has freed. A clock set back before the arrival lapses it too.
    static func floatingSeatLapsed(_ lease: Lease, receivedAt: Int64?, now: Int64) -> Bool {
        guard let receivedAt else { return true }
        let length = max(0, lease.expiresAt - lease.issuedAt)
        return now < receivedAt - floatingClockTolerance || now > receivedAt + length
    }

    private func limited(_ reason: String, _ detail: LicenseState.Reason) -> Resolution {
        Resolution(state: .limited, entitlements: fallbackEntitlements, reason: reason, detail: detail)
    }

    /// `2026-11-22` for a Unix time (UTC), for reasons people read.
    static func day(_ seconds: Int64) -> String {
        Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601.year().month().day())
    }

    /// A config just received, if it may replace `current`: signed by a trusted key for this
    /// product, not expired, and not older than the config already kept. (A kept config stays
    /// usable after its expiry, see ``trustedConfig(_:)``; a received one must be current, or an
    /// old one could be replayed forever.)
    func freshConfig(_ config: SignedProductConfig?, replacing current: SignedProductConfig?, now: Int64) -> SignedProductConfig? {
        guard let config else { return nil }
        let verification = config.verify(tenantId: tenantId, productId: productId, with: trustedKeys, now: now)
        guard verification.isTrusted, !verification.expired else { return nil }
        if let current = trustedConfig(current), config.issuedAt < current.issuedAt { return nil }
        return config
    }

    /// The cached config if signed by a trusted key for this product. An authentic config stays
    /// usable after its expiry: it still says what the server said, and apps go offline.
    func trustedConfig(_ config: SignedProductConfig?) -> SignedProductConfig? {
        guard let config else { return nil }
        return config.verify(tenantId: tenantId, productId: productId, with: trustedKeys, now: 0).isTrusted ? config : nil
    }
}
