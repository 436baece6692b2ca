import Foundation
@testable import Keylight
import KeylightCore
import Testing

/// Issue 51, part 7: the header that authorizes the update feed (`X-Keylight-Lease`), its
/// renewal before it runs out, and what is sent when the renewal cannot be had.
@MainActor
@Suite(.timeLimit(.minutes(3))) struct UpdateFeedHeaderTests {
    /// The lease JSON a header value carries, decoded as the server decodes it: base64url without
    /// padding, undone here by hand so a fault in the SDK's own helper cannot hide.
    static func leaseJSON(in value: String?) throws -> Data {
        let value = try #require(value)
        #expect(!value.isEmpty && !value.contains("=") && !value.contains("+") && !value.contains("/"), "not unpadded base64url: \(value)")
        var standard = value.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return try #require(Data(base64Encoded: standard))
    }

    static let oneDay: Int64 = 86_400

    @Test func withoutALeaseNoHeaderIsSent() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = Fixture.manager(server: server, trialDaysSeed: 14)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        // A trial: the server's public-feed setting decides, and nothing is validated to ask it.
        #expect(await manager.updateFeedHTTPHeaders() == [:])
        #expect(server.count("validate") == 0)

        // A license given up takes its lease with it.
        try await manager.activate(key: Fixture.key)
        #expect(await manager.updateFeedHTTPHeaders().count == 1)
        try await manager.deactivate()
        #expect(await manager.updateFeedHTTPHeaders() == [:])
    }

    @Test func aFreshLeaseIsSentAsItsOwnJSONWithoutARenewal() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = try await Fixture.activated(server: server, store: InMemoryStore())
        let kept = try #require(manager.stored.lease)
        let validations = server.count("validate")

        let headers = await manager.updateFeedHTTPHeaders()
        #expect(Array(headers.keys) == ["X-Keylight-Lease"])
        let json = try Self.leaseJSON(in: headers["X-Keylight-Lease"])
        // The bytes are the lease's canonical JSON, the form the server verifies.
        #expect(json == kept.json())
        #expect(try Lease(json: json) == kept)
        #expect(server.count("validate") == validations)
    }

    /// 23 hours left of the 7-day lease, or a lease that ended a day ago (an app closed for 8 days).
    @Test(arguments: [6 * 86_400 + 3_600, 8 * 86_400] as [Int64])
    func aLeaseNearItsEndIsRenewedFirst(elapsed: Int64) async throws {
        let clock = TestClock()
        let server = FakeServer(clock: clock)
        let manager = try await Fixture.activated(server: server, store: InMemoryStore())
        let old = try #require(manager.stored.lease)
        clock.advance(by: elapsed)
        let validations = server.count("validate")

        let headers = await manager.updateFeedHTTPHeaders()
        #expect(server.count("validate") == validations + 1)
        let sent = try Lease(json: Self.leaseJSON(in: headers["X-Keylight-Lease"]))
        #expect(sent != old)
        #expect(sent.issuedAt == clock.unixSeconds && sent.expiresAt == clock.unixSeconds + 7 * Self.oneDay)
        #expect(sent == manager.stored.lease)
    }

    @Test func offlineTheCurrentLeaseIsStillSent() async throws {
        let clock = TestClock()
        let server = FakeServer(clock: clock)
        let manager = try await Fixture.activated(server: server, store: InMemoryStore())
        let old = try #require(manager.stored.lease)
        clock.advance(by: 6 * Self.oneDay + 3_600)
        server.mode = .offline  // the transport throws
        let validations = server.count("validate")

        let headers = await manager.updateFeedHTTPHeaders()
        #expect(server.count("validate") == validations + 1)  // a renewal was tried
        #expect(try Self.leaseJSON(in: headers["X-Keylight-Lease"]) == old.json())
        #expect(manager.stored.lease == old)
        #expect(manager.state == .licensed)
    }

    @Test func aSlowRenewalIsNotWaitedForButIsKept() async throws {
        let clock = TestClock()
        let server = FakeServer(clock: clock)
        let manager = try await Fixture.activated(server: server, store: InMemoryStore())
        let old = try #require(manager.stored.lease)
        clock.advance(by: 6 * Self.oneDay + 3_600)
        let validations = server.count("validate")
        server.hold()

        // The server holds the validation: the bound passes and the lease there is goes out.
        let started = ContinuousClock.now
        let headers = await manager.updateFeedHTTPHeaders(refreshTimeout: 0.2)
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(try Self.leaseJSON(in: headers["X-Keylight-Lease"]) == old.json())

        // The renewal was not abandoned: once the server answers, its lease is kept and sent,
        // without asking again.
        server.release()
        for _ in 0..<400 where manager.stored.lease == old { try await Task.sleep(for: .milliseconds(5)) }
        let renewed = try #require(manager.stored.lease)
        #expect(renewed != old)
        let again = await manager.updateFeedHTTPHeaders()
        #expect(try Self.leaseJSON(in: again["X-Keylight-Lease"]) == renewed.json())
        #expect(server.count("validate") == validations + 1)
    }

    @Test func theRenewalWindow() {
        let now: Int64 = 1_781_076_246, window = Self.oneDay
        func leaseEnding(at expiresAt: Int64) -> Lease {
            Lease(kid: "k1", licenseKeyHash: "h", instanceId: "i", issuedAt: 0, expiresAt: expiresAt, status: .active, signature: "", entitlements: [])
        }
        func needsRefresh(_ lease: Lease?, activated: Bool = true, at time: Int64) -> Bool {
            UpdateFeedAuthorization.needsRefresh(lease, isActivated: activated, now: time, window: window)
        }
        #expect(!needsRefresh(leaseEnding(at: now + window), at: now))
        #expect(needsRefresh(leaseEnding(at: now + window - 1), at: now))
        #expect(needsRefresh(leaseEnding(at: now - 1), at: now))
        // Nothing to renew through: no activation (the validate path needs one), or no lease.
        #expect(!needsRefresh(leaseEnding(at: now), activated: false, at: now))
        #expect(!needsRefresh(nil, at: now))
        // Dates at the ends of the range answer, they do not trap.
        #expect(needsRefresh(leaseEnding(at: .min), at: .max))
        #expect(!needsRefresh(leaseEnding(at: .max), at: .min))

        #expect(UpdateFeedAuthorization.headers(for: nil, now: now) == [:])
        #expect(UpdateFeedAuthorization.headers(for: leaseEnding(at: now), now: now).keys.sorted() == ["X-Keylight-Lease"])
        // Within the server's 300 s of skew it is sent; past it, nothing (a public feed then still answers).
        #expect(UpdateFeedAuthorization.headers(for: leaseEnding(at: now - 300), now: now).count == 1)
        #expect(UpdateFeedAuthorization.headers(for: leaseEnding(at: now - 301), now: now) == [:])
    }
}
