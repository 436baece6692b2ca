import Foundation
import KeylightCore
import Observation
#if canImport(Combine)
import Combine
#endif

/// One element of ``LicenseManager/stateChanges()``.
public struct LicenseUpdate: Hashable, Sendable {
    public var state: LicenseState
    /// The verification result of the last response (with the failure reason, if any).
    public var verification: VerificationResult
}

/// Resolves and keeps this app's license state: offline-first at launch, refreshed on a fixed
/// cadence, published through Observation, an `AsyncStream` and a notification.
@MainActor
@Observable
public final class LicenseManager {
    /// The current state. Starts `.expired` (nothing granted) until ``checkOnLaunch()``.
    public private(set) var state: LicenseState = .expired
    /// Entitlement codes granted now: the license's when `.licensed`, ``Configuration/fallbackEntitlements``
    /// when `.limited`, else none. Never the signed `updates-until:` code (see ``updatesEntitledUntil``).
    public private(set) var entitlements: [String] = []
    /// Why the state is what it is, in words.
    public private(set) var reason = "not checked yet"
    /// The last error from the server or storage (state changes only on server decisions).
    public internal(set) var lastError: KeylightError?
    /// The server's last word on seats: more are in use than the license's limit (its overage
    /// allows it). For a gentle "buy more seats" message, never for refusing access.
    public internal(set) var isOverLimit = false
    /// When the manager will next refresh on its own.
    public internal(set) var nextRefreshAt: Date?
    /// How the last response's signature checked out (see ``VerificationMode``).
    public internal(set) var lastVerification: VerificationResult = .notRequested

    public let configuration: Configuration

    @ObservationIgnored let client: KeylightClient
    @ObservationIgnored let resolver: LicenseResolver
    @ObservationIgnored var stored = PersistedState()
    @ObservationIgnored var failures = 0
    @ObservationIgnored var pendingRefresh: Task<Void, Never>?
    @ObservationIgnored var scheduledRefresh: Task<Void, Never>?
    @ObservationIgnored var observers: [UUID: AsyncStream<LicenseUpdate>.Continuation] = [:]
    @ObservationIgnored var random = SystemRandomNumberGenerator()
    /// A license the server refused is asked about again once per launch (a reinstated license
    /// recovers without the key being entered again).
    @ObservationIgnored var recheckRefusal = false
    /// The store could not be read yet at launch (see ``loadStoredState()``).
    @ObservationIgnored var storeLocked = false
    /// Turns state changes into ``LicenseLifecycleEvent``s.
    @ObservationIgnored var lifecycle = LifecycleTracker()
    #if canImport(Combine)
    /// Drives `ObservableObject`'s `objectWillChange` (for `@StateObject`, `@EnvironmentObject`).
    @ObservationIgnored @Published private var changes = 0
    #endif

    public init(configuration: Configuration) {
        self.configuration = configuration
        self.client = KeylightClient(
            transport: configuration.transport, tenantId: configuration.tenantId, productId: configuration.productId,
            sdkKey: configuration.sdkKey, mode: configuration.verificationMode,
            verification: ResponseVerification(verifier: ResponseSignatureVerifier(keyset: Keyset(configuration.trustedKeys))),
            clock: configuration.clock, appVersion: configuration.appVersion
        )
        self.resolver = LicenseResolver(
            tenantId: configuration.tenantId, productId: configuration.productId,
            trustedKeys: Keyset(configuration.trustedKeys), trialDaysSeed: configuration.trialDaysSeed,
            appReleaseDate: configuration.appReleaseDate.map { Int64($0.timeIntervalSince1970.rounded(.down)) },
            fallbackEntitlements: configuration.fallbackEntitlements,
            maxOfflineSeconds: configuration.maxOfflineDays.map { Int64(min(max($0, 0), 36_500)) * 86_400 },
            freeTierSeed: configuration.freeTierSeed
        )
    }

    deinit {
        // A manager that goes away stops its timers; a sleeping refresh must not outlive it. Only
        // Sendable stored properties are touched, so this needs no isolated deinit (newer OSes only).
        scheduledRefresh?.cancel()
        pendingRefresh?.cancel()
        for continuation in observers.values { continuation.finish() }
    }

    /// Full access: a current license or a running trial.
    public var isEntitled: Bool {
        switch state {
        case .licensed, .trial: true
        default: false
        }
    }

    /// Whether `code` is granted: by the license's entitlements, by a running trial (which
    /// lets users try everything), or in the `.limited` state by ``Configuration/fallbackEntitlements``.
    public func hasEntitlement(_ code: String) -> Bool {
        switch state {
        case .licensed, .limited: entitlements.contains(code)
        case .trial: true
        default: false
        }
    }

    /// The activated instance, if any.
    public var instanceId: String? { stored.instanceId }
    /// When the cached lease ends, if there is one.
    public var leaseExpiresAt: Date? { stored.lease.map { Date(timeIntervalSince1970: TimeInterval($0.expiresAt)) } }

    /// Decides the state from what is stored, without waiting for the network, then refreshes
    /// in the background if a refresh is due (``waitUntilIdle()`` awaits it).
    public func checkOnLaunch() async {
        guard loadStoredState() else { return }
        if stored.trialStartedAt == nil {
            stored.trialStartedAt = configuration.clock.unixSeconds
            persist()
        }
        // A stricter verification mode than the cache was filled under: refetch what it would refuse.
        if stored.discardUnverified(for: configuration.verificationMode) { persist() }
        resolve()
        recheckRefusal = stored.rejection != nil && stored.licenseKey != nil
        pendingRefresh = Task { await self.refreshIfNeeded(force: self.recheckRefusal) }
    }

    /// Waits for the refresh started by ``checkOnLaunch()`` (tests, command-line tools).
    public func waitUntilIdle() async {
        await pendingRefresh?.value
    }

    /// Updates from now on: one element per change of state or of the verification result.
    public func stateChanges() -> AsyncStream<LicenseUpdate> {
        let (stream, continuation) = AsyncStream.makeStream(of: LicenseUpdate.self)
        let id = UUID()
        observers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { @MainActor in self?.observers[id] = nil }
        }
        return stream
    }

    // MARK: Internals shared by the extensions

    /// Decides the state from what is kept. `announcing: false` keeps a user's own action (a
    /// deactivation) from being announced as a lifecycle event.
    func resolve(announcing: Bool = true) {
        let resolution = resolver.resolve(stored, now: configuration.clock.unixSeconds)
        willChange()
        reason = resolution.reason
        entitlements = resolution.entitlements
        let previous = state
        let event = lifecycle.transition(from: previous, to: resolution.state, licenseExpiresAt: stored.licenseExpiresAt, announcing: announcing)
        if resolution.state != state {
            state = resolution.state
            publish()
            NotificationCenter.default.post(name: .keylightLicenseDidChange, object: self, userInfo: [
                "state": resolution.state.name, "verification": lastVerification.description,
            ])
        }
        if let event { NotificationCenter.default.post(name: .keylightLifecycleEvent, object: self, userInfo: event.userInfo) }
    }

    /// Said before any published property changes, for `ObservableObject` observers (SwiftUI's
    /// `@StateObject`) on Apple platforms; Observation tracks the properties themselves.
    func willChange() {
        #if canImport(Combine)
        changes &+= 1
        #endif
    }

    /// Records how a response's signature checked out, publishing a change.
    func record(_ verification: VerificationResult) {
        willChange()
        if case .failed(let reason) = verification, configuration.verificationMode == .informational {
            configuration.onVerificationFailure?(.signatureVerificationFailed(reason))
        }
        guard verification != lastVerification else { return }
        lastVerification = verification
        publish()
    }

    private func publish() {
        let update = LicenseUpdate(state: state, verification: lastVerification)
        for continuation in observers.values { continuation.yield(update) }
    }

    /// Reads what the store keeps. False when the store cannot be read yet (the Keychain before
    /// the first unlock): nothing is resolved, written or sent until a later read succeeds — an
    /// empty state written then would erase the license — and the read is retried on a timer.
    func loadStoredState() -> Bool {
        do {
            let (state, isCompact) = try PersistedState.loadReportingLayout(from: configuration.store)
            stored = state
            storeLocked = false
            // An earlier SDK's JSON: read once, kept in the compact layout from now on.
            if !isCompact { persist() }
        } catch let error as KeylightError where error.code == KeylightError.storageLocked.code {
            lastError = error
            storeLocked = true
            reason = "waiting for the device to be unlocked"
            let delay = configuration.refreshPolicy.lockedStoreRetry
            scheduledRefresh?.cancel()
            scheduledRefresh = Task { [weak self] in
                try? await Task.sleep(for: .seconds(delay))
                guard !Task.isCancelled else { return }
                await self?.checkOnLaunch()
            }
            return false
        } catch let error as KeylightError {
            // Unreadable (corrupt) state: start again from nothing rather than never launch.
            lastError = error
            stored = PersistedState()
        } catch {
            lastError = .storage("\(error)")
            stored = PersistedState()
        }
        storeLocked = false
        return true
    }

    func persist() {
        guard !storeLocked else { return }
        do {
            try stored.save(to: configuration.store)
        } catch let error as KeylightError {
            lastError = error
        } catch {
            lastError = .storage("\(error)")
        }
    }

    /// Records the server's own time from a verified response (a lease's or config's `issuedAt`)
    /// as the clock-rollback reference (seed 000). Only server times enter it, so a device clock
    /// that ran ahead and was corrected never poisons it; the reference written by older SDKs (local
    /// time) is no longer read, and the first verified answer sets the new one.
    func sawServer(serverTime: Int64) {
        stored.serverSeen = max(stored.serverSeen ?? serverTime, serverTime)
    }

    /// True when the device clock reads more than an hour before the server's time at the last
    /// verified contact: the clock was set back (the state is then `.invalid` until it is right).
    public var isClockManipulated: Bool {
        LicenseResolver.isClockManipulated(serverSeen: stored.serverSeen, now: configuration.clock.unixSeconds)
    }

    /// This device's per-product hash. A store that cannot be read is an error, never an empty
    /// hash: the server would take "" for another machine.
    func machineHash() throws -> String {
        let hash = try MachineIdentity.hash(productKey: "\(configuration.tenantId)/\(configuration.productId)", store: configuration.store)
        guard !hash.isEmpty else { throw KeylightError.storage("no device identity") }
        return hash
    }
}

#if canImport(Combine)
/// SwiftUI code written for `ObservableObject` (`@StateObject`, `@ObservedObject`,
/// `@EnvironmentObject`) works unchanged; Observation (`@Observable`) works too.
extension LicenseManager: ObservableObject {}
#endif
