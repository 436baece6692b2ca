import Crypto
import Foundation
@testable import Keylight
import KeylightCore
import KeylightSigning
import Testing

/// Every row of the launch resolution table, on the pure resolver.
@Suite(.timeLimit(.minutes(3))) struct LicenseResolverTests {
    static let signer = try! SigningKey.generate(kid: "k1")
    static let stranger = try! SigningKey.generate(kid: "k1")
    static let now: Int64 = 1_781_076_246
    static let resolver = LicenseResolver(tenantId: "acme", productId: "app", trustedKeys: Keyset(["k1": signer.publicKey]), trialDaysSeed: 7)

    static func lease(_ status: Lease.Status, by key: SigningKey = signer, expiresAt: Int64 = now + 86_400, licenseKey: String = Fixture.key) -> Lease {
        try! Lease.sign(licenseKeyHash: LicenseKey.hash(normalizing: licenseKey), instanceId: "i1", issuedAt: min(now - 10, expiresAt), expiresAt: expiresAt,
                        status: status, entitlements: status == .active ? ["pro"] : [], with: key)
    }

    static func config(trialDays: Int = 14, freeTier: Bool, by key: SigningKey = signer) -> SignedProductConfig {
        ProductConfig(tenantId: "acme", productId: "app", trialDurationDays: trialDays, freeTierEnabled: freeTier, issuedAt: now - 100, expiresAt: now + 86_400).signed(with: key)
    }

    static func licensed(_ lease: Lease?) -> PersistedState {
        var state = PersistedState()
        state.licenseKey = Fixture.key
        state.instanceId = "i1"
        state.lease = lease
        state.trialStartedAt = now - 100 * 86_400
        return state
    }

    @Test func clockSetBackMoreThanAnHourIsInvalid() {
        var stored = Self.licensed(Self.lease(.active))
        stored.serverSeen = Self.now + 3_601
        #expect(Self.resolver.resolve(stored, now: Self.now).state == .invalid)
        stored.serverSeen = Self.now + 3_599
        #expect(Self.resolver.resolve(stored, now: Self.now).state == .licensed)
    }

    @Test func freshActiveLeaseIsLicensedWithItsEntitlements() {
        let resolution = Self.resolver.resolve(Self.licensed(Self.lease(.active)), now: Self.now)
        #expect(resolution.state == .licensed)
        #expect(resolution.entitlements == ["pro"])
    }

    @Test func fallbackLeaseIsLimited() {
        #expect(Self.resolver.resolve(Self.licensed(Self.lease(.fallback)), now: Self.now).state == .limited)
    }

    @Test func expiredLeaseStatusIsExpired() {
        #expect(Self.resolver.resolve(Self.licensed(Self.lease(.expired)), now: Self.now).state == .expired)
    }

    @Test func serverRejectionIsInvalidWhateverTheLease() {
        var stored = Self.licensed(Self.lease(.active))
        stored.rejection = "LICENSE_REVOKED"
        #expect(Self.resolver.resolve(stored, now: Self.now).state == .invalid)
    }

    @Test func untrustedOrMismatchedLeasesNeverGrant() {
        #expect(Self.resolver.resolve(Self.licensed(Self.lease(.active, by: Self.stranger)), now: Self.now).state == .invalid)
        var unknownKid = Self.lease(.active)
        unknownKid.kid = "k9"
        #expect(Self.resolver.resolve(Self.licensed(unknownKid), now: Self.now).state == .invalid)
        var tampered = Self.lease(.active)
        tampered.entitlements.append("admin")
        #expect(Self.resolver.resolve(Self.licensed(tampered), now: Self.now).state == .invalid)
        #expect(Self.resolver.resolve(Self.licensed(Self.lease(.active, licenseKey: "ACME-0000-0000-0000-0000")), now: Self.now).state == .invalid)
        #expect(Self.resolver.resolve(Self.licensed(nil), now: Self.now).state == .invalid)
    }

    @Test func leaseRunOutWhileOfflineIsExpired() {
        let stale = Self.lease(.active, expiresAt: Self.now - 301)
        #expect(Self.resolver.resolve(Self.licensed(stale), now: Self.now).state == .expired)
        // Within the 300 s skew it still counts.
        #expect(Self.resolver.resolve(Self.licensed(Self.lease(.active, expiresAt: Self.now - 299)), now: Self.now).state == .licensed)
    }

    @Test func trialRunsOnTheVerifiedConfigsLength() {
        var stored = PersistedState()
        stored.config = Self.config(trialDays: 14, freeTier: false)
        stored.trialStartedAt = Self.now - 3 * 86_400
        #expect(Self.resolver.resolve(stored, now: Self.now).state == .trial(daysLeft: 11))
        stored.trialStartedAt = Self.now - 13 * 86_400 - 1
        #expect(Self.resolver.resolve(stored, now: Self.now).state == .trial(daysLeft: 1))
    }

    @Test func trialUsesTheSeedUntilAConfigIsVerified() {
        var stored = PersistedState()
        stored.trialStartedAt = Self.now - 86_400
        #expect(Self.resolver.resolve(stored, now: Self.now).state == .trial(daysLeft: 6))
        // A config signed by someone else is ignored.
        stored.config = Self.config(trialDays: 365, freeTier: true, by: Self.stranger)
        #expect(Self.resolver.resolve(stored, now: Self.now).state == .trial(daysLeft: 6))
    }

    @Test func trialOverWithFreeTierIsFreeTier() {
        var stored = PersistedState()
        stored.config = Self.config(freeTier: true)
        stored.trialStartedAt = Self.now - 15 * 86_400
        #expect(Self.resolver.resolve(stored, now: Self.now).state == .freeTier)
    }

    @Test func trialOverWithoutFreeTierIsExpired() {
        var stored = PersistedState()
        stored.config = Self.config(freeTier: false)
        stored.trialStartedAt = Self.now - 15 * 86_400
        #expect(Self.resolver.resolve(stored, now: Self.now).state == .expired)
    }

    @Test func configNeverFetchedIsExpiredNotFreeTier() {
        // First launch offline with no trial seed: no signed config, so no free tier.
        let resolver = LicenseResolver(tenantId: "acme", productId: "app", trustedKeys: Keyset(["k1": Self.signer.publicKey]), trialDaysSeed: 0)
        var stored = PersistedState()
        stored.trialStartedAt = Self.now
        #expect(resolver.resolve(stored, now: Self.now).state == .expired)
        // A forged config does not change that.
        stored.config = Self.config(freeTier: true, by: Self.stranger)
        #expect(resolver.resolve(stored, now: Self.now).state == .expired)
    }

    @Test func configForAnotherProductIsIgnored() {
        var stored = PersistedState()
        stored.trialStartedAt = Self.now - 30 * 86_400
        stored.config = ProductConfig(tenantId: "acme", productId: "other", trialDurationDays: 0, freeTierEnabled: true, issuedAt: 0, expiresAt: 1).signed(with: Self.signer)
        #expect(Self.resolver.resolve(stored, now: Self.now).state == .expired)
    }
}

@Suite(.timeLimit(.minutes(3))) struct RefreshPolicyTests {
    let policy = RefreshPolicy()
    let now: Int64 = 1_000_000

    @Test func debounceStalenessAndLeaseWindow() {
        #expect(policy.isDue(lastRefresh: nil, lastAttempt: nil, leaseExpiresAt: nil, now: now))
        #expect(!policy.isDue(lastRefresh: nil, lastAttempt: now - 299, leaseExpiresAt: nil, now: now))
        #expect(policy.isDue(lastRefresh: now - 6 * 3_600 - 1, lastAttempt: now - 301, leaseExpiresAt: now + 7 * 86_400, now: now))
        #expect(!policy.isDue(lastRefresh: now - 6 * 3_600 + 1, lastAttempt: now - 301, leaseExpiresAt: now + 7 * 86_400, now: now))
        #expect(policy.isDue(lastRefresh: now - 60, lastAttempt: now - 301, leaseExpiresAt: now + 24 * 3_600 - 1, now: now))
        #expect(!policy.isDue(lastRefresh: now - 60, lastAttempt: now - 60, leaseExpiresAt: now + 10, now: now))
    }

    @Test func scheduledRefreshIsAnHourBeforeLeaseExpiryOrWhenStale() {
        #expect(policy.nextRefresh(lastRefresh: now, leaseExpiresAt: now + 3 * 3_600, now: now) == now + 2 * 3_600)
        #expect(policy.nextRefresh(lastRefresh: now, leaseExpiresAt: now + 7 * 86_400, now: now) == now + 6 * 3_600)
        // Never sooner than the debounce.
        #expect(policy.nextRefresh(lastRefresh: now, leaseExpiresAt: now + 60, now: now) == now + 300)
    }

    @Test func backoffGrowsWithJitterAndHonoursRetryAfter() {
        var generator = SystemRandomNumberGenerator()
        for attempt in 1...10 {
            let ceiling = min(3_600, 30 * pow(2, Double(attempt - 1)))
            for _ in 0..<50 {
                let delay = policy.backoff(attempt: attempt, retryAfter: nil, using: &generator)
                #expect(delay >= ceiling / 2 && delay <= ceiling)
            }
        }
        #expect(policy.backoff(attempt: 1, retryAfter: 900, using: &generator) >= 900)
        let samples = Set((0..<20).map { _ in policy.backoff(attempt: 5, retryAfter: nil, using: &generator) })
        #expect(samples.count > 1)
    }
}
