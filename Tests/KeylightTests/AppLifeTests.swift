import Foundation
@testable import Keylight
import KeylightCore
import KeylightSigning
import Testing

/// A store whose device-identity reads fail on demand (a locked Keychain, a corrupt file).
final class FlakyStore: SecureStore, @unchecked Sendable {
    // @unchecked: `failing` is behind `lock`; `inner` is Sendable.
    let inner = InMemoryStore()
    private let lock = NSLock()
    private var _failing = false
    var failing: Bool { get { lock.withLock { _failing } } set { lock.withLock { _failing = newValue } } }

    func data(for key: String) throws -> Data? {
        if failing, key == "device-id" { throw KeylightError.storage("keychain locked") }
        return try inner.data(for: key)
    }

    func set(_ data: Data?, for key: String) throws {
        if failing, key == "device-id" { throw KeylightError.storage("keychain locked") }
        try inner.set(data, for: key)
    }
}

/// Issue 14, point 3: the rules that keep a paying customer licensed through bad networks,
/// proxies, clocks and stores, and still act on the server's real verdicts.
@MainActor
@Suite(.timeLimit(.minutes(3))) struct AppLifeTests {
    /// 404 (ours or a proxy's), 401, 400, 409 are configuration or transport problems, never a verdict.
    @Test func onlyVerdictsChangeTheState() async throws {
        let server = FakeServer(clock: TestClock())
        let store = InMemoryStore()
        let manager = Fixture.manager(server: server, store: store)
        await manager.checkOnLaunch()
        try await manager.activate(key: Fixture.key)
        let modes: [FakeServer.Mode] = [
            .status(404, code: "NOT_FOUND", retryAfter: nil), .status(404, code: "HTTP_404", retryAfter: nil),
            .status(401, code: "UNAUTHORIZED", retryAfter: nil), .status(400, code: "INVALID_REQUEST", retryAfter: nil),
            .status(409, code: "ACTIVATION_LIMIT_REACHED", retryAfter: nil), .status(422, code: "SOMETHING_NEW", retryAfter: nil),
        ]
        for mode in modes {
            server.mode = mode
            await manager.refreshIfNeeded(force: true)
            #expect(manager.state == .licensed, "\(mode)")
            #expect(manager.lastError != nil)
        }
        // Nothing was stored as a refusal: the next launch is licensed and keeps asking.
        let relaunched = Fixture.manager(server: server, store: store)
        await relaunched.checkOnLaunch()
        #expect(relaunched.state == .licensed)
        for code in ["LICENSE_SUSPENDED", "INSTANCE_INACTIVE", "LICENSE_REVOKED"] {
            server.mode = .status(422, code: code, retryAfter: nil)
            let fresh = Fixture.manager(server: server, store: InMemoryStore())
            await fresh.checkOnLaunch()
            server.mode = .normal
            try await fresh.activate(key: Fixture.key)
            server.mode = .status(422, code: code, retryAfter: nil)
            await fresh.refreshIfNeeded(force: true)
            #expect(fresh.state == .invalid, "\(code)")
        }
    }

    /// A suspended license that is reinstated recovers at the next launch without the key being entered again.
    @Test func aRefusalIsRecheckedAtTheNextLaunch() async throws {
        let server = FakeServer(clock: TestClock())
        let store = InMemoryStore()
        let manager = Fixture.manager(server: server, store: store)
        await manager.checkOnLaunch()
        try await manager.activate(key: Fixture.key)
        server.mode = .status(422, code: "LICENSE_SUSPENDED", retryAfter: nil)
        await manager.refreshIfNeeded(force: true)
        #expect(manager.state == .invalid)
        // Within the same run, nothing more is asked.
        let asked = server.count("validate")
        server.clock.advance(by: 7 * 3_600)
        await manager.refreshIfNeeded()
        #expect(server.count("validate") == asked)

        server.mode = .normal  // reinstated
        let relaunched = Fixture.manager(server: server, store: store)
        await relaunched.checkOnLaunch()
        await relaunched.waitUntilIdle()
        #expect(server.count("validate") == asked + 1)
        #expect(relaunched.state == .licensed)
        #expect(try PersistedState.load(from: store).rejection == nil)
    }

    /// Seed 000: the reference is the server's time, reset by each verified answer; a clock that
    /// ran ahead and was corrected is not a rollback, one set back before the server's time is.
    @Test func theRollbackReferenceIsTheServersTime() async throws {
        let clock = TestClock()
        let server = FakeServer(clock: clock)
        let store = InMemoryStore()
        server.serverOffset = -3 * 86_400  // the device's clock runs three days ahead
        let manager = Fixture.manager(server: server, store: store)
        await manager.checkOnLaunch()
        try await manager.activate(key: Fixture.key)
        #expect(manager.state == .licensed && !manager.isClockManipulated)

        clock.advance(by: -3 * 86_400)  // the user corrects it
        server.serverOffset = 0
        server.mode = .offline
        let corrected = Fixture.manager(server: server, store: store)
        await corrected.checkOnLaunch()
        #expect(corrected.state == .licensed && !corrected.isClockManipulated)

        clock.advance(by: -2 * 3_600)  // now set back two hours before the server's time
        let rolledBack = Fixture.manager(server: server, store: store)
        await rolledBack.checkOnLaunch()
        #expect(rolledBack.state == .invalid && rolledBack.isClockManipulated)

        clock.advance(by: 2 * 3_600)  // right again; a verified answer resets the reference
        server.mode = .normal
        let fixed = Fixture.manager(server: server, store: store)
        await fixed.checkOnLaunch()
        #expect(fixed.state == .licensed && !fixed.isClockManipulated)
        await fixed.refreshIfNeeded(force: true)
        #expect(try PersistedState.load(from: store).serverSeen == clock.unixSeconds)
    }

    /// A store that cannot be read sends no request with an empty machine hash; it is retried.
    @Test func anUnreadableStoreNeverSendsAnEmptyMachineHash() async throws {
        let server = FakeServer(clock: TestClock())
        let store = FlakyStore()
        let manager = Fixture.manager(server: server, store: store)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()  // the launch's own keyless refresh is not counted below
        try await manager.activate(key: Fixture.key)
        store.failing = true
        let before = server.requests.count
        await manager.refreshIfNeeded(force: true)
        #expect(server.requests.count == before)
        #expect(manager.state == .licensed && manager.lastError?.code == "STORAGE")
        store.failing = false
        await manager.refreshIfNeeded(force: true)
        let sent = try #require(server.requests.last?.body.flatMap { try JSONSerialization.jsonObject(with: $0) as? [String: String] })
        #expect(sent["machine_hash"]?.count == 64)
        #expect(server.requests.allSatisfy { request in
            let body = request.body.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: String] }
            return body?["machine_hash"] != ""
        })
    }

    /// A signed config must be current and no older than the one kept: an old one (free tier on) replayed is refused.
    @Test func anOldSignedConfigCannotBeReplayed() async throws {
        let clock = TestClock()
        let server = FakeServer(clock: clock)
        server.freeTier = true
        let old = ProductConfig(tenantId: "acme", productId: "app", trialDurationDays: 0, freeTierEnabled: true, issuedAt: clock.unixSeconds, expiresAt: clock.unixSeconds + 86_400)
            .signed(with: server.key)
        clock.advance(by: 10 * 86_400)
        server.trialDays = 0
        server.freeTier = false
        let manager = Fixture.manager(server: server)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        #expect(manager.state == .expired)
        server.configOverride = old  // expired, and older than the one kept
        clock.advance(by: 2 * 86_400)
        await manager.refreshIfNeeded(force: true)
        #expect(manager.state == .expired && manager.lastError == .untrustedLease)
        // A current config from the server is taken.
        server.configOverride = nil
        server.freeTier = true
        clock.advance(by: 301)
        await manager.refreshIfNeeded(force: true)
        #expect(manager.state == .freeTier)
    }

    /// Backoff after failures, but never sooner than the debounce.
    @Test func retriesWaitAtLeastTheDebounce() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = Fixture.manager(server: server)
        await manager.checkOnLaunch()
        try await manager.activate(key: Fixture.key)
        server.mode = .offline
        for _ in 0..<3 {
            await manager.refreshIfNeeded(force: true)
            let next = try #require(manager.nextRefreshAt).timeIntervalSince1970
            #expect(next >= Double(server.clock.unixSeconds + manager.configuration.refreshPolicy.debounce))
        }
    }

    /// Protocol 6.1: a trial that ran out reports `expired`; `app_version` goes with every request, trimmed.
    @Test func keylessReportsExpiredAndRequestsCarryTheAppVersion() async throws {
        let server = FakeServer(clock: TestClock())
        server.trialDays = 0
        server.freeTier = false
        let longVersion = "2.4.1 (" + String(repeating: "9", count: 80) + ")\u{7}"
        let manager = Fixture.manager(server: server) { $0.appVersion = longVersion }
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        #expect(manager.state == .expired)
        server.clock.advance(by: 86_401)
        await manager.refreshIfNeeded(force: true)
        let beacons = server.requests.filter { $0.path.hasSuffix("/keyless") }.compactMap { $0.body.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: String] } }
        #expect(beacons.last?["state"] == "expired")
        let version = try #require(beacons.last?["app_version"])
        #expect(version.hasPrefix("2.4.1 (") && version.utf8.count <= 64 && !version.contains("\u{7}"))
    }

    /// Seed 004: in informational mode a failed signature check reaches the app's callback.
    @Test func informationalFailuresReachTheCallback() async throws {
        let server = FakeServer(clock: TestClock())
        server.signsResponses = true
        let reported = Locked<[String]>([])
        let manager = Fixture.manager(server: server, trusted: server.keyset) { configuration in
            configuration.onVerificationFailure = { error in reported.withLock { $0.append(error.code) } }
        }
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        #expect(reported.withLock { $0 }.isEmpty)
        server.signsResponses = false
        try await manager.activate(key: Fixture.key)
        #expect(manager.state == .licensed)  // informational: used all the same
        #expect(reported.withLock { $0 } == ["SIGNATURE_VERIFICATION_FAILED"])
    }

    /// Seed 001: one app-wide manager for apps that want it.
    @Test func theSharedManager() async throws {
        let server = FakeServer(clock: TestClock())
        let configured = LicenseManager.configureShared(Fixture.manager(server: server).configuration)
        #expect(LicenseManager.shared === configured && LicenseManager.sharedIfConfigured === configured)
        await LicenseManager.shared.checkOnLaunch()
        try await LicenseManager.shared.activate(key: Fixture.key)
        #expect(configured.state == .licensed)
    }

    /// A revoked user replaying the lease kept on the device (in a fake 200) cannot lift the refusal
    /// or pull the clock reference back.
    @Test func aReplayedLeaseNeitherLiftsARefusalNorMovesTheReference() async throws {
        let clock = TestClock()
        let server = FakeServer(clock: clock)
        let store = InMemoryStore()
        let manager = Fixture.manager(server: server, store: store)
        await manager.checkOnLaunch()
        try await manager.activate(key: Fixture.key)
        let kept = try #require(try PersistedState.load(from: store).lease)
        clock.advance(by: 3_600)
        server.mode = .status(422, code: "LICENSE_REVOKED", retryAfter: nil)
        await manager.refreshIfNeeded(force: true)
        #expect(manager.state == .invalid)
        let reference = try PersistedState.load(from: store).serverSeen
        // The "server" now answers with a lease as old as the kept one: the fake clock is set back to its issue time.
        server.mode = .normal
        server.serverOffset = kept.issuedAt - clock.unixSeconds
        let relaunched = Fixture.manager(server: server, store: store)
        await relaunched.checkOnLaunch()
        await relaunched.waitUntilIdle()
        #expect(relaunched.state == .invalid && relaunched.lastError == .untrustedLease)
        #expect(try PersistedState.load(from: store).serverSeen == reference)
    }
}
