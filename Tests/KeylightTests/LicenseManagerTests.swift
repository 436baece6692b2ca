import Crypto
import Foundation
@testable import Keylight
import KeylightCore
import KeylightSigning
import Testing

@MainActor
@Suite(.timeLimit(.minutes(3))) struct LicenseManagerTests {
    @Test func activationLicensesAndPersists() async throws {
        let server = FakeServer(clock: TestClock())
        let store = InMemoryStore()
        let manager = Fixture.manager(server: server, store: store)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        try await manager.activate(key: " acme-ab12-cd34-ef56-gh78 ")
        #expect(manager.state == .licensed)
        #expect(manager.entitlements == ["pro"])
        #expect(manager.isEntitled && manager.hasEntitlement("pro") && !manager.hasEntitlement("admin"))
        let body = try #require(server.requests.last { $0.path == "/acme/app/activate" }?.body)
        let fields = try #require(try JSONSerialization.jsonObject(with: body) as? [String: String])
        #expect(fields["license_key"] == Fixture.key)
        #expect(fields["instance_name"] == "Test Mac")
        #expect(fields["machine_hash"]?.count == 64)
        #expect(server.requests.last?.headers["X-Keylight-SDK-Key"] == "kl_sdk_test")

        // A new launch with the server unreachable decides from the cache.
        server.mode = .offline
        let relaunched = Fixture.manager(server: server, store: store)
        await relaunched.checkOnLaunch()
        #expect(relaunched.state == .licensed)
        #expect(relaunched.instanceId == "instance-1")
    }

    @Test func launchDecidesWithoutWaitingForTheNetwork() async throws {
        let server = FakeServer(clock: TestClock())
        let store = InMemoryStore()
        let first = Fixture.manager(server: server, store: store)
        await first.checkOnLaunch()
        await first.waitUntilIdle()
        try await first.activate(key: Fixture.key)
        server.clock.advance(by: 7 * 3_600)  // a refresh is due

        server.hold()
        let manager = Fixture.manager(server: server, store: store)
        let before = server.count("validate")
        await manager.checkOnLaunch()
        #expect(manager.state == .licensed)  // decided while the validate request is still held
        for _ in 0..<200 where server.count("validate") == before { try await Task.sleep(for: .milliseconds(5)) }
        #expect(server.count("validate") == before + 1)
        server.release()
        await manager.waitUntilIdle()
        #expect(manager.state == .licensed)
    }

    @Test func untrustedLeaseFromTheServerGrantsNothing() async throws {
        let server = FakeServer(clock: TestClock())
        server.signWith = try SigningKey.generate(kid: "k1")  // same kid, foreign key
        let manager = Fixture.manager(server: server, trialDaysSeed: 5)
        await manager.checkOnLaunch()
        await #expect(throws: KeylightError.untrustedLease) { try await manager.activate(key: Fixture.key) }
        #expect(manager.state == .trial(daysLeft: 5))
        #expect(manager.instanceId == nil)
    }

    @Test func refusalsAndBadKeysChangeNothing() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = Fixture.manager(server: server, trialDaysSeed: 5)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        let before = manager.state
        let sent = server.requests.count
        await #expect(throws: KeylightError.invalidKeyFormat) { try await manager.activate(key: "not a key") }
        await #expect(throws: KeylightError.invalidKeyFormat) { try await manager.activate(key: "ZZZZ-AB12-CD34-EF56-GH78") }
        #expect(server.requests.count == sent)
        server.mode = .status(409, code: "ACTIVATION_LIMIT_REACHED", retryAfter: nil)
        await #expect(throws: KeylightError.server(code: "ACTIVATION_LIMIT_REACHED", message: "refused")) { try await manager.activate(key: Fixture.key) }
        #expect(manager.state == before)
        #expect(manager.lastError?.code == "ACTIVATION_LIMIT_REACHED")
    }

    @Test func serverIssuedStatusesDecideTheState() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = Fixture.manager(server: server)
        await manager.checkOnLaunch()
        try await manager.activate(key: Fixture.key)
        // The license lapsed but the server still issues active leases (renewed, grace): licensed.
        server.licenseExpiresAt = server.clock.unixSeconds - 10
        await manager.refreshIfNeeded(force: true)
        #expect(manager.state == .licensed)
        server.leaseStatus = .fallback
        await manager.refreshIfNeeded(force: true)
        #expect(manager.state == .limited)
        #expect(manager.entitlements.isEmpty && !manager.hasEntitlement("pro"))
        server.leaseStatus = .expired
        await manager.refreshIfNeeded(force: true)
        #expect(manager.state == .expired)
        server.leaseStatus = .active
        await manager.refreshIfNeeded(force: true)
        #expect(manager.state == .licensed)
    }

    @Test func transientFailuresKeepTheStateAndBackOff() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = Fixture.manager(server: server)
        await manager.checkOnLaunch()
        try await manager.activate(key: Fixture.key)
        for mode in [FakeServer.Mode.offline, .status(503, code: "UNAVAILABLE", retryAfter: nil), .status(500, code: "INTERNAL", retryAfter: nil), .status(429, code: "RATE_LIMITED", retryAfter: 1_200)] {
            server.mode = mode
            await manager.refreshIfNeeded(force: true)
            #expect(manager.state == .licensed, "\(mode)")
            #expect(manager.lastError != nil)
        }
        // The last failure carried Retry-After: 1200.
        let next = try #require(manager.nextRefreshAt).timeIntervalSince1970
        #expect(next >= Double(server.clock.unixSeconds + 1_200))
        server.mode = .normal
        await manager.refreshIfNeeded(force: true)
        #expect(manager.lastError == nil)
    }

    @Test func explicitRejectionIsInvalidAndSticks() async throws {
        let server = FakeServer(clock: TestClock())
        let store = InMemoryStore()
        let manager = Fixture.manager(server: server, store: store)
        await manager.checkOnLaunch()
        try await manager.activate(key: Fixture.key)
        var changes: [LicenseUpdate] = []
        let stream = manager.stateChanges()
        let posted = NoteRecorder()
        let token = NotificationCenter.default.addObserver(forName: .keylightLicenseDidChange, object: manager, queue: nil) { note in
            posted.record(note.userInfo?["state"] as? String)
        }
        defer { NotificationCenter.default.removeObserver(token) }
        server.mode = .status(422, code: "LICENSE_REVOKED", retryAfter: nil)
        await manager.refreshIfNeeded(force: true)
        #expect(manager.state == .invalid)
        #expect(manager.lastError?.code == "LICENSE_REVOKED")
        for await state in stream { changes.append(state); break }
        #expect(changes.map(\.state) == [.invalid])
        #expect(posted.states == ["invalid"])
        // Still refused at the next launch: the re-check confirms it, and nothing grants access meanwhile.
        let relaunched = Fixture.manager(server: server, store: store)
        await relaunched.checkOnLaunch()
        #expect(relaunched.state == .invalid)
        await relaunched.waitUntilIdle()
        #expect(relaunched.state == .invalid && server.count("validate") == 2)
        // A new activation clears the refusal.
        server.mode = .normal
        try await relaunched.activate(key: Fixture.key)
        #expect(relaunched.state == .licensed)
    }

    @Test func refreshCadence() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = Fixture.manager(server: server)
        await manager.checkOnLaunch()
        try await manager.activate(key: Fixture.key)
        let validates = { server.count("validate") }
        await manager.refreshIfNeeded()
        #expect(validates() == 0)  // just activated: fresh
        server.clock.advance(by: 6 * 3_600 + 1)
        await manager.refreshIfNeeded()
        #expect(validates() == 1)  // stale after 6 h
        await manager.refreshIfNeeded()
        #expect(validates() == 1)  // debounced
        server.clock.advance(by: 301)
        await manager.refreshIfNeeded()
        #expect(validates() == 1)  // fresh again
        // Lease ends within 24 h: refresh even though the last one was recent.
        server.clock.advance(by: 6 * 86_400 + 3_600)
        await manager.refreshIfNeeded()
        #expect(validates() == 2)
        // The next routine refresh: an hour before the lease ends or 6 h on, whichever is first.
        let lease = try #require(manager.leaseExpiresAt).timeIntervalSince1970
        let next = try #require(manager.nextRefreshAt).timeIntervalSince1970
        #expect(next == min(lease - 3_600, Double(server.clock.unixSeconds + 6 * 3_600)))
    }

    @Test func clockRollbackIsDetectedAgainstTheLastRoundTrip() async throws {
        let clock = TestClock()
        let server = FakeServer(clock: clock)
        let store = InMemoryStore()
        let manager = Fixture.manager(server: server, store: store)
        await manager.checkOnLaunch()
        try await manager.activate(key: Fixture.key)
        clock.advance(by: -1_800)
        let nearby = Fixture.manager(server: server, store: store)
        server.mode = .offline
        await nearby.checkOnLaunch()
        #expect(nearby.state == .licensed)
        clock.advance(by: -7_200)
        let rolledBack = Fixture.manager(server: server, store: store)
        await rolledBack.checkOnLaunch()
        #expect(rolledBack.state == .invalid)
    }

    @Test func trialClockConfigAndBeacon() async throws {
        let server = FakeServer(clock: TestClock())
        server.trialDays = 10
        server.freeTier = true
        let store = InMemoryStore()
        let manager = Fixture.manager(server: server, store: store, trialDaysSeed: 3)
        await manager.checkOnLaunch()
        #expect(manager.state == .trial(daysLeft: 3))  // seed, before the config arrives
        await manager.waitUntilIdle()
        #expect(manager.state == .trial(daysLeft: 10))  // verified config
        #expect(server.count("keyless") == 1)
        let beacon = try #require(server.requests.first { $0.path.hasSuffix("/keyless") }?.body)
        #expect((try JSONSerialization.jsonObject(with: beacon) as? [String: String])?["state"] == "trial")

        // Four days on: the trial clock started at the first launch; the beacon waits 24 h.
        server.clock.advance(by: 4 * 86_400)
        let later = Fixture.manager(server: server, store: store, trialDaysSeed: 3)
        await later.checkOnLaunch()
        #expect(later.state == .trial(daysLeft: 6))
        await later.waitUntilIdle()
        #expect(server.count("keyless") == 2)
        server.clock.advance(by: 7 * 3_600)
        await later.refreshIfNeeded()
        #expect(server.count("keyless") == 2)  // beacon debounced for 24 h …
        #expect(server.count("config") == 1)   // … while the stale config is fetched
        // Trial over: free tier from the verified config.
        server.clock.advance(by: 7 * 86_400)
        await later.refreshIfNeeded()
        #expect(later.state == .freeTier)
    }

    @Test func forgedConfigNeverGrantsFreeTier() async throws {
        let server = FakeServer(clock: TestClock())
        server.signWith = try SigningKey.generate(kid: "k1")
        let manager = Fixture.manager(server: server, trialDaysSeed: 0)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        #expect(manager.state == .expired)
        #expect(manager.lastError == .untrustedLease)
    }

    @Test func deactivateFreesTheSlotAndReturnsToTheTrial() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = Fixture.manager(server: server, trialDaysSeed: 30)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        try await manager.activate(key: Fixture.key)
        #expect(manager.state == .licensed)
        server.mode = .offline
        await #expect(throws: KeylightError.self) { try await manager.deactivate() }
        #expect(manager.state == .licensed)
        server.mode = .normal
        try await manager.deactivate()
        #expect(server.count("deactivate") == 2)
        #expect(manager.state == .trial(daysLeft: 14))
        #expect(manager.instanceId == nil)
        await #expect(throws: KeylightError.notActivated) { try await manager.deactivate() }
    }
}

/// Collects notification payloads from any thread.
final class NoteRecorder: @unchecked Sendable {
    // @unchecked: `values` is only touched under `lock`.
    private var values: [String?] = []
    private let lock = NSLock()
    func record(_ value: String?) { lock.withLock { values.append(value) } }
    var states: [String?] { lock.withLock { values } }
}
