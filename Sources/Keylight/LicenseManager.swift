import Foundation
import KeylightCore

/// One element of ``LicenseManager/stateChanges()``.
public struct LicenseUpdate: Hashable, Sendable {
    public var state: LicenseState
    /// The verification result of the last response (with the failure reason, if any).
    public var verification: SignatureCheck
}

/// Resolves and keeps this app's license state: offline-first at launch, refreshed on a fixed
/// cadence, published to SwiftUI (`ObservableObject` on every system, Observation where the system
/// has it), an `AsyncStream` and a notification.
@MainActor
public final class LicenseManager {
    /// The current state. `.expired` (nothing granted) until ``isResolved``: draw neither the
    /// paywall nor the licensed content before then.
    public internal(set) var state: LicenseState {
        get { access(\.state); return _state }
        set { withMutation(\.state) { _state = newValue } }
    }
    /// Whether ``state`` has been decided from what this device keeps (``checkOnLaunch()`` reads it
    /// before any network call). Not a state of its own: before it, the app shows neither the
    /// paywall nor the content, so a paying user never sees the paywall flash at launch.
    public internal(set) var isResolved: Bool {
        get { access(\.isResolved); return _isResolved }
        set { withMutation(\.isResolved) { _isResolved = newValue } }
    }
    /// Why the state is what it is, for the interface to word (nil while licensed or in a trial).
    public internal(set) var stateReason: LicenseState.Reason? {
        get { access(\.stateReason); return _stateReason }
        set { withMutation(\.stateReason) { _stateReason = newValue } }
    }
    /// Entitlement codes granted now: the license's when `.licensed`, ``Configuration/fallbackEntitlements``
    /// when `.limited`, else none. Never the signed `updates-until:` code (see ``updatesEntitledUntil``).
    public internal(set) var entitlements: [String] {
        get { access(\.entitlements); return _entitlements }
        set { withMutation(\.entitlements) { _entitlements = newValue } }
    }
    /// Why the state is what it is, in English words for logs (``stateReason`` is for code).
    public internal(set) var reason: String {
        get { access(\.reason); return _reason }
        set { withMutation(\.reason) { _reason = newValue } }
    }
    /// The last error from the server or storage (state changes only on server decisions).
    public internal(set) var lastError: KeylightError? {
        get { access(\.lastError); return _lastError }
        set { withMutation(\.lastError) { _lastError = newValue } }
    }
    /// The server's last word on seats: more are in use than the license's limit (its overage
    /// allows it). For a gentle "buy more seats" message, never for refusing access.
    public internal(set) var isOverLimit: Bool {
        get { access(\.isOverLimit); return _isOverLimit }
        set { withMutation(\.isOverLimit) { _isOverLimit = newValue } }
    }
    /// When the manager will next refresh on its own.
    public internal(set) var nextRefreshAt: Date? {
        get { access(\.nextRefreshAt); return _nextRefreshAt }
        set { withMutation(\.nextRefreshAt) { _nextRefreshAt = newValue } }
    }
    /// How the last response's signature checked out (see ``VerificationMode``).
    public internal(set) var lastVerification: SignatureCheck {
        get { access(\.lastVerification); return _lastVerification }
        set { withMutation(\.lastVerification) { _lastVerification = newValue } }
    }

    private var _state: LicenseState = .expired
    private var _isResolved = false
    private var _stateReason: LicenseState.Reason?
    private var _entitlements: [String] = []
    private var _reason = "not checked yet"
    private var _lastError: KeylightError?
    private var _isOverLimit = false
    private var _nextRefreshAt: Date?
    private var _lastVerification: SignatureCheck = .notRequested
    let observationRegistrar = LicenseManager.makeObservationRegistrar()

    public let configuration: Configuration

    let client: KeylightClient
    let resolver: LicenseResolver
    /// The store's reads and writes, off the main actor.
    let io: StoreIO
    var stored = PersistedState()
    var failures = 0
    var pendingRefresh: Task<Void, Never>?
    var scheduledRefresh: Task<Void, Never>?
    var observers: [UUID: AsyncStream<LicenseUpdate>.Continuation] = [:]
    var random = SystemRandomNumberGenerator()
    /// A license the server refused is asked about again once per launch (a reinstated license
    /// recovers without the key being entered again).
    var recheckRefusal = false
    /// The store could not be read yet at launch (see ``loadStoredState()``).
    var storeLocked = false
    /// The store has been read once (or is being read: ``loading``).
    var loaded = false
    var loading: Task<Bool, Never>?
    /// The last write handed to ``io``; each waits for the one before it.
    var lastWrite: Task<Void, Never>?
    var writeSequence = 0
    /// Turns state changes into ``LicenseLifecycleEvent``s.
    var lifecycle = LifecycleTracker()
    /// Made by ``preview(state:entitlements:reason:)``: resolved once, never read, written or refreshed.
    var isPreview = false

    public init(configuration: Configuration) {
        self.configuration = configuration
        self.io = StoreIO(store: configuration.store)
        self.client = KeylightClient(
            transport: configuration.transport, tenantId: configuration.tenantId, productId: configuration.productId,
            sdkKey: configuration.sdkKey, mode: configuration.verificationMode,
            verification: ResponseVerification(verifier: ResponseSignatureVerifier(keyset: Keyset(configuration.trustedKeys))),
            clock: configuration.clock, appVersion: configuration.appVersion, sendsTelemetry: configuration.sendsTelemetry
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

    /// Decides the state from what this device keeps, before any network call (the store is
    /// read off the main actor), sets ``isResolved``, then refreshes in the background if a
    /// refresh is due (``waitUntilIdle()`` awaits it).
    public func checkOnLaunch() async {
        guard !isPreview, await loadStoredState() else { return }
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

    /// Waits for the refresh started by ``checkOnLaunch()`` and for what it wrote to the store
    /// (tests, command-line tools).
    public func waitUntilIdle() async {
        await pendingRefresh?.value
        await flushWrites()
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
        if reason != resolution.reason { reason = resolution.reason }
        if stateReason != resolution.detail { stateReason = resolution.detail }
        if entitlements != resolution.entitlements { entitlements = resolution.entitlements }
        let previous = state
        let event = lifecycle.transition(from: previous, to: resolution.state, licenseExpiresAt: stored.licenseExpiresAt, announcing: announcing)
        let firstResolution = !isResolved
        if firstResolution { isResolved = true }
        if resolution.state != state || firstResolution {
            if resolution.state != state { state = resolution.state }
            publish()
            NotificationCenter.default.post(name: .keylightLicenseDidChange, object: self, userInfo: [
                "state": resolution.state.name, "verification": lastVerification.description,
            ])
        }
        if let event { NotificationCenter.default.post(name: .keylightLifecycleEvent, object: self, userInfo: event.userInfo) }
    }

    /// Records how a response's signature checked out, publishing a change.
    func record(_ verification: SignatureCheck) {
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

    /// True when the device clock reads more than an hour before the server's time at the last
    /// verified contact: the clock was set back (the state is then `.invalid` until it is right).
    public var isClockManipulated: Bool {
        LicenseResolver.isClockManipulated(serverSeen: stored.serverSeen, now: configuration.clock.unixSeconds)
    }
}
