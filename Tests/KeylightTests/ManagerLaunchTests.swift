import Foundation
@testable import Keylight
import KeylightCore
import Observation
import Testing

/// The first second of an app: nothing drawn from an unresolved state, the store read off the
/// main actor, every published change heard by observers, and reasons the interface can word.
@MainActor @Suite(.timeLimit(.minutes(2))) struct ManagerLaunchTests {
    /// A paying user's relaunch: unresolved (neither paywall nor content) until the kept lease is
    /// read, then licensed while the server is still being asked.
    @Test func isResolvedComesFromTheKeptLeaseBeforeAnyNetworkCall() async throws {
        let server = FakeServer(clock: TestClock())
        let store = InMemoryStore()
        _ = try await Fixture.activated(server: server, store: store)
        server.clock.advance(by: 7 * 3_600)  // a refresh is due
        server.hold()
        let manager = Fixture.manager(server: server, store: store)
        #expect(manager.isResolved == false)
        #expect(manager.state == .expired)  // the placeholder an app must not draw from
        let before = server.count("validate")
        await manager.checkOnLaunch()
        #expect(manager.isResolved)
        #expect(manager.state == .licensed)
        #expect(manager.stateReason == nil)
        server.release()
        await manager.waitUntilIdle()
        #expect(server.count("validate") == before + 1)
    }

    /// A call made before `checkOnLaunch()` reads the store first; it never writes an empty state
    /// over the license.
    @Test func aRefreshBeforeLaunchDoesNotEraseTheLicense() async throws {
        let server = FakeServer(clock: TestClock())
        let store = InMemoryStore()
        _ = try await Fixture.activated(server: server, store: store)
        server.mode = .offline
        let manager = Fixture.manager(server: server, store: store)
        await manager.refreshIfNeeded(force: true)
        #expect(manager.isResolved)
        #expect(manager.state == .licensed)
        #expect(try PersistedState.load(from: store).licenseKey == Fixture.key)
    }

    /// The store is read and written on another executor than the main actor's: at launch, and
    /// for an activation (the device id, then the new license).
    @Test func theStoreIsReadAndWrittenOffTheMainActor() async throws {
        let store = ThreadRecordingStore()
        let manager = Fixture.manager(server: FakeServer(clock: TestClock()), store: store)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        try await manager.activate(key: Fixture.key)
        #expect(store.reads > 0 && store.writes > 0)
        #expect(store.readsOnMainThread == 0)
        #expect(store.writesOnMainThread == 0)
    }

    /// Every published property tells Observation's observers it changed (and, on Apple systems,
    /// `objectWillChange` through the same path).
    @Test func everyPublishedChangeIsObserved() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = Fixture.manager(server: server)
        let changed = Flag()
        withObservationTracking {
            _ = manager.isResolved
        } onChange: { changed.set() }
        await manager.checkOnLaunch()
        #expect(changed.value)

        let errorChanged = Flag()
        withObservationTracking {
            _ = manager.lastError
        } onChange: { errorChanged.set() }
        server.mode = .offline
        await #expect(throws: KeylightError.self) { try await manager.activate(key: Fixture.key) }
        #expect(errorChanged.value)

        let stateChanged = Flag(), reasonChanged = Flag()
        withObservationTracking { _ = manager.state } onChange: { stateChanged.set() }
        withObservationTracking { _ = manager.stateReason } onChange: { reasonChanged.set() }
        server.mode = .normal
        try await manager.activate(key: Fixture.key)
        #expect(stateChanged.value)
        #expect(manager.state == .licensed)
    }

    @Test func reasonsNameWhyTheStateIsWhatItIs() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = try await Fixture.activated(server: server, store: InMemoryStore())
        server.mode = .status(422, code: "LICENSE_SUSPENDED", retryAfter: nil)
        await manager.refreshIfNeeded(force: true)
        #expect(manager.state == .invalid)
        #expect(manager.stateReason == .suspended)
        let noTrial = FakeServer(clock: TestClock())
        noTrial.trialDays = 0
        let trial = Fixture.manager(server: noTrial, trialDaysSeed: 0)
        await trial.checkOnLaunch()
        await trial.waitUntilIdle()
        #expect(trial.state == .freeTier)
        #expect(trial.stateReason == .trialOver)

        #expect(LicenseState.Reason.refusal("LICENSE_REVOKED") == .revoked)
        #expect(LicenseState.Reason.refusal("INSTANCE_INACTIVE") == .deactivated)
        #expect(LicenseState.Reason.refusal("LICENSE_SUSPENDED") == .suspended)
    }

    @Test func aLeaseThatRanOutOfflineSaysSo() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = try await Fixture.activated(server: server, store: InMemoryStore())
        server.mode = .offline
        server.clock.advance(by: 8 * 86_400)
        await manager.refreshIfNeeded(force: true)
        #expect(manager.state == .expired)
        #expect(manager.stateReason == .leaseExpiredOffline)
    }
}

/// A store that counts its reads and how many of them ran on the main thread.
final class ThreadRecordingStore: SecureStore {
    private let inner = InMemoryStore()
    private let counts = Locked((reads: 0, onMain: 0, writes: 0, writesOnMain: 0))
    var reads: Int { counts.withLock { $0.reads } }
    var readsOnMainThread: Int { counts.withLock { $0.onMain } }
    var writes: Int { counts.withLock { $0.writes } }
    var writesOnMainThread: Int { counts.withLock { $0.writesOnMain } }

    func data(for key: String) throws -> Data? {
        counts.withLock { $0.reads += 1; if Thread.isMainThread { $0.onMain += 1 } }
        return try inner.data(for: key)
    }

    func set(_ data: Data?, for key: String) throws {
        counts.withLock { $0.writes += 1; if Thread.isMainThread { $0.writesOnMain += 1 } }
        try inner.set(data, for: key)
    }
}

final class Flag: Sendable {
    private let state = Locked(false)
    var value: Bool { state.withLock { $0 } }
    func set() { state.withLock { $0 = true } }
}

/// Giving a floating seat back at quit never holds the app for longer than its bound.
@MainActor @Suite(.timeLimit(.minutes(1))) struct SeatReleaseTests {
    @Test func releasingASeatIsBounded() async throws {
        let server = FakeServer(clock: TestClock())
        server.heartbeat = 600
        let manager = try await Fixture.activated(server: server, store: InMemoryStore())
        #expect(manager.isFloating)
        server.hold()
        let started = ContinuousClock.now
        let released = await manager.releaseSeat(timeout: 0.3)
        let waited = ContinuousClock.now - started
        #expect(released == false)
        #expect(waited < .seconds(10))  // bounded (0.3 s asked; generous for a loaded machine)
        #expect(manager.lastError?.kind == .network)
        server.release()

        let answered = await manager.releaseSeat(timeout: 5)
        #expect(answered)
        #expect(manager.state == .limited)
        #expect(manager.stateReason == .noFloatingSeat)
    }
}

@MainActor @Suite struct PreviewManagerTests {
    @Test func aPreviewIsResolvedAndNeverChanges() async throws {
        let preview = LicenseManager.preview(state: .limited, entitlements: ["export"], reason: .fallbackAccess)
        #expect(preview.isResolved)
        #expect(preview.state == .limited && preview.stateReason == .fallbackAccess)
        #expect(preview.hasEntitlement("export") && !preview.hasEntitlement("pro"))
        await preview.checkOnLaunch()
        await preview.refreshIfNeeded(force: true)
        #expect(preview.state == .limited)
        let error = await #expect(throws: KeylightError.self) { try await preview.activate(key: Fixture.key) }
        #expect(error?.kind == .configuration)
        #expect(LicenseManager.preview(state: .trial(daysLeft: 3)).isEntitled)
    }
}
