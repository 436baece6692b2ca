import Foundation
@testable import Keylight
import KeylightCore
import KeylightSigning
import Testing

/// The launch table's rows for floating seats and "updates until" licenses, on the pure resolver.
@Suite(.timeLimit(.minutes(3))) struct FloatingAndUpdatesResolverTests {
    typealias Base = LicenseResolverTests
    static let now = Base.now
    static let until = now - 30 * 86_400

    static func resolver(release: Int64?, fallback: [String] = ["export"]) -> LicenseResolver {
        LicenseResolver(tenantId: "acme", productId: "app", trustedKeys: Keyset(["k1": Base.signer.publicKey]), trialDaysSeed: 7,
                        appReleaseDate: release, fallbackEntitlements: fallback)
    }

    static func lease(entitlements: [String], status: Lease.Status = .active, expiresAt: Int64 = now + 600) -> Lease {
        try! Lease.sign(licenseKeyHash: LicenseKey.hash(normalizing: Fixture.key), instanceId: "i1", issuedAt: min(now - 10, expiresAt), expiresAt: expiresAt,
                        status: status, entitlements: entitlements, with: Base.signer)
    }

    @Test func aBuildReleasedAfterTheUpdatesRunsLimitedWithTheFallbackEntitlements() {
        let stored = Base.licensed(Self.lease(entitlements: ["pro", UpdatesEntitlement.code(until: Self.until)]))
        let newer = Self.resolver(release: Self.until + 1).resolve(stored, now: Self.now)
        #expect(newer.state == .limited && newer.entitlements == ["export"])
        #expect(newer.reason.contains("newer than the updates"))
        // Released on the last covered second, or earlier: licensed, and the code is not an entitlement.
        for release in [Self.until, Self.until - 400 * 86_400] {
            let covered = Self.resolver(release: release).resolve(stored, now: Self.now)
            #expect(covered.state == .licensed && covered.entitlements == ["pro"])
        }
        // An app that says nothing about its release applies no bound (as older SDKs never did).
        #expect(Self.resolver(release: nil).resolve(stored, now: Self.now).state == .licensed)
        // Without the code there is no bound, however new the build.
        #expect(Self.resolver(release: 1 << 40).resolve(Base.licensed(Self.lease(entitlements: ["pro"])), now: Self.now).state == .licensed)
    }

    @Test func aMalformedCodeBindsNothingAndTwoCodesBindToTheEarlier() {
        let odd = Base.licensed(Self.lease(entitlements: ["pro", "updates-until:0123", "updates-until:x"]))
        #expect(Self.resolver(release: 1 << 40).resolve(odd, now: Self.now).state == .licensed)
        let two = Base.licensed(Self.lease(entitlements: [UpdatesEntitlement.code(until: Self.until), UpdatesEntitlement.code(until: Self.until + 999)]))
        #expect(Self.resolver(release: Self.until + 1).resolve(two, now: Self.now).state == .limited)
    }

    @Test func fallbackLeasesGrantTheFallbackEntitlements() {
        let resolution = Self.resolver(release: nil).resolve(Base.licensed(Self.lease(entitlements: [], status: .fallback)), now: Self.now)
        #expect(resolution.state == .limited && resolution.entitlements == ["export"])
    }

    @Test func aFloatingLicenseWithoutALiveSeatIsLimitedNotExpired() {
        var stored = Base.licensed(Self.lease(entitlements: ["pro"], expiresAt: Self.now - 301))
        stored.floatingHeartbeat = 30
        let lapsed = Self.resolver(release: nil).resolve(stored, now: Self.now)
        #expect(lapsed.state == .limited && lapsed.entitlements == ["export"] && lapsed.reason.contains("heartbeat"))
        // The same lapsed lease of a node-locked license is expired, as before.
        stored.floatingHeartbeat = nil
        #expect(Self.resolver(release: nil).resolve(stored, now: Self.now).state == .expired)
        // A seat given back at quit: key kept, no instance, no lease.
        var released = Base.licensed(nil)
        released.instanceId = nil
        released.floatingHeartbeat = 30
        #expect(Self.resolver(release: nil).resolve(released, now: Self.now).state == .limited)
        // A live floating seat is licensed; the server's "expired" lease stays expired; a refusal stays invalid.
        var live = Base.licensed(Self.lease(entitlements: ["pro"]))
        live.floatingHeartbeat = 30
        live.leaseReceivedAt = Self.now - 5
        #expect(Self.resolver(release: nil).resolve(live, now: Self.now).state == .licensed)
        var lapsedLicense = Base.licensed(Self.lease(entitlements: [], status: .expired))
        lapsedLicense.floatingHeartbeat = 30
        #expect(Self.resolver(release: nil).resolve(lapsedLicense, now: Self.now).state == .expired)
        live.rejection = "LICENSE_REVOKED"
        #expect(Self.resolver(release: nil).resolve(live, now: Self.now).state == .invalid)
    }

    @Test func aFloatingLeaseIsHeldForItsLengthFromArrivalNotUntilExpiryPlusSkew() {
        // A 30 s lease, issued 10 s before now by the server's clock.
        let lease = Self.lease(entitlements: ["pro"], expiresAt: Self.now + 20)
        var stored = Base.licensed(lease)
        stored.floatingHeartbeat = 30
        stored.leaseReceivedAt = Self.now - 30
        #expect(Self.resolver(release: nil).resolve(stored, now: Self.now).state == .licensed)
        #expect(Self.resolver(release: nil).resolve(stored, now: Self.now + 1).state == .limited)
        // Within the protocol's skew, but the seat's own length has passed: no longer licensed.
        #expect(lease.verify(with: Keyset(["k1": Base.signer.publicKey]), now: Self.now + 200).expired == false)
        #expect(Self.resolver(release: nil).resolve(stored, now: Self.now + 200).state == .limited)
        // A device clock 4 minutes ahead of the server holds a lease it just received for the
        // lease's length, neither less nor (by the skew) more.
        stored.leaseReceivedAt = Self.now + 240
        #expect(Self.resolver(release: nil).resolve(stored, now: Self.now + 270).state == .licensed)
        #expect(Self.resolver(release: nil).resolve(stored, now: Self.now + 271).state == .limited)
        // A clock set back more than a minute before the arrival lapses it; an NTP nudge does not.
        stored.leaseReceivedAt = Self.now
        #expect(Self.resolver(release: nil).resolve(stored, now: Self.now - 30).state == .licensed)
        #expect(Self.resolver(release: nil).resolve(stored, now: Self.now - 61).state == .limited)
        // No arrival time kept (an older store): lapsed until the next heartbeat.
        stored.leaseReceivedAt = nil
        #expect(Self.resolver(release: nil).resolve(stored, now: Self.now).state == .limited)
    }

    @Test func heartbeatCadence() {
        #expect(RefreshPolicy.heartbeatInterval(600) == 570)
        #expect(RefreshPolicy.heartbeatInterval(61) == 31)
        #expect(RefreshPolicy.heartbeatInterval(60) == 30)
        #expect(RefreshPolicy.heartbeatInterval(10) == 5)
        // Hostile values are clamped: never a zero interval, never longer than a day.
        #expect(RefreshPolicy.heartbeatInterval(0) == 5 && RefreshPolicy.heartbeatInterval(-5) == 5)
        #expect(RefreshPolicy.heartbeatInterval(Int.max) == 86_370)
        let policy = RefreshPolicy()
        #expect(!policy.isHeartbeatDue(lastRefresh: 1_000, lastAttempt: 1_000, heartbeat: 600, holdsSeat: true, now: 1_569))
        #expect(policy.isHeartbeatDue(lastRefresh: 1_000, lastAttempt: 1_000, heartbeat: 600, holdsSeat: true, now: 1_570))
        // Without a seat: at once, but attempts stay a few seconds apart.
        #expect(policy.isHeartbeatDue(lastRefresh: 1_000, lastAttempt: 1_000, heartbeat: 10, holdsSeat: false, now: 1_002))
        #expect(!policy.isHeartbeatDue(lastRefresh: 1_000, lastAttempt: 1_001, heartbeat: 10, holdsSeat: false, now: 1_002))
        #expect(!policy.isHeartbeatDue(lastRefresh: 1_000, lastAttempt: 1_000, heartbeat: 600, holdsSeat: false, now: 1_004))
        #expect(policy.isHeartbeatDue(lastRefresh: 1_000, lastAttempt: 1_000, heartbeat: 600, holdsSeat: false, now: 1_005))
        // Retries come within the heartbeat, and never before Retry-After.
        #expect(policy.heartbeatRetryDelay(backoff: 3_600, retryAfter: nil, heartbeat: 600) == 30)
        #expect(policy.heartbeatRetryDelay(backoff: 3_600, retryAfter: nil, heartbeat: 30) == 7.5)
        #expect(policy.heartbeatRetryDelay(backoff: 3_600, retryAfter: 400, heartbeat: 600) == 400)
        #expect(policy.heartbeatRetryDelay(backoff: 0.2, retryAfter: nil, heartbeat: 10) == 1)
    }

    @Test func updateCoverageForUpdaters() {
        let until = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(UpdateCoverage.covers(releasedAt: until, until: until))
        #expect(!UpdateCoverage.covers(releasedAt: until.addingTimeInterval(1), until: until))
        #expect(!UpdateCoverage.covers(releasedAt: nil, until: until))
        #expect(UpdateCoverage.covers(releasedAt: nil, until: nil))
        let items = [("3.0", until.addingTimeInterval(86_400)), ("2.9", until), ("2.8", until.addingTimeInterval(-86_400))]
        #expect(UpdateCoverage.newestCovered(items, until: until) { $0.1 }?.0 == "2.9")
        #expect(UpdateCoverage.newestCovered(items, until: nil) { $0.1 }?.0 == "3.0")
    }

    @Test func releaseDatesFromTheBundle() {
        #expect(Configuration.releaseDate(from: "2026-11-22") == Date(timeIntervalSince1970: 1_795_305_600))
        #expect(Configuration.releaseDate(from: "2026-11-22T12:00:00Z") == Date(timeIntervalSince1970: 1_795_348_800))
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(Configuration.releaseDate(from: date) == date)
        for bad in ["", "soon", "2026-13-40", String(repeating: "9", count: 100)] as [Any] {
            #expect(Configuration.releaseDate(from: bad) == nil, "\(bad)")
        }
        #expect(Configuration.releaseDate(from: 42) == nil && Configuration.releaseDate(from: nil) == nil)
    }
}
