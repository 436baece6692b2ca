import Foundation
import KeylightCore

/// Everything the manager keeps between launches, stored as one sealed item so a launch is one
/// read. Never holds anything the server did not sign that could grant access on its own.
struct PersistedState: Codable, Equatable, Sendable {
    var licenseKey: String?
    var instanceId: String?
    var lease: Lease?
    var config: SignedProductConfig?
    /// Unix seconds of the first launch: the trial clock.
    var trialStartedAt: Int64?
    /// Written by SDKs before the server-time reference; local time, so never read any more (a
    /// clock that once ran ahead left it in the future).
    var lastSeen: Int64?
    /// The latest server time from a verified lease or config (its `issuedAt`): a device clock
    /// more than an hour before it was turned back. Only server times enter it, so it only moves forward.
    var serverSeen: Int64?
    /// Last successful refresh, and last attempt of any outcome (for the debounce).
    var lastRefresh: Int64?
    var lastAttempt: Int64?
    /// Last keyless beacon, and the id it used.
    var lastBeacon: Int64?
    var keylessInstanceId: String?
    /// The server's explicit refusal of this license (`LICENSE_REVOKED`, …), if any.
    var rejection: String?
    /// How the responses that brought the cached lease and config were verified
    /// (`verified`, `failed`, `notRequested`), so a stricter mode can discard what it would not accept.
    var leaseVerification: String?
    var configVerification: String?
    /// The cached lease was discarded for want of verification; the next verified refresh decides.
    var awaitingVerifiedLease: Bool?
    /// The license was activated from an offline response file (its seat is given back with a
    /// deactivation proof signed by the device key).
    var offlineActivation: Bool?
    /// The last deactivation proof made here and not yet submitted from here.
    var pendingDeactivationProof: String?
    /// Instances this device gave up with a deactivation proof (newest last, at most
    /// ``surrenderLimit``): a response file for one of them is never imported again, or the proof
    /// could free the seat while the old response keeps the device licensed.
    var surrenderedInstances: [String]?
    /// The license's seats float: the heartbeat (seconds) its seat must be renewed within. Taken
    /// from the server's answer, clamped to 10 s-1 day. nil for seats that do not float.
    var floatingHeartbeat: Int?
    /// This device's clock when the kept lease arrived. A floating seat's lease is held for its
    /// length from here, not until its `expiresAt` plus the protocol's 300 s skew: with a heartbeat
    /// of seconds, the skew would keep a freed seat licensed for minutes, and a device clock
    /// running ahead would lapse every lease on arrival.
    var leaseReceivedAt: Int64?

    /// When the license itself ends (the server's `license_expires_at`; nil: never, or unknown).
    /// Not signed, so it grants nothing: it only says when a renewal moved the end (lifecycle events).
    var licenseExpiresAt: Int64?
    /// Who bought the license, and what the key type is called, as the server last said (unsigned:
    /// for the license summary, never for access).
    var customerEmail: String?
    var keyTypeName: String?
    /// Where the server offers this license an upgrade or a renewal, as it last said.
    var upgradeURL: String?

    static let surrenderLimit = 32

    /// How a lease or config imported from an offline response was checked: its own signature and
    /// the binding to this device. Every verification mode accepts it (there was no response to sign).
    static let offlineVerification = "offline"

    static let storeKey = "state"

    static func load(from store: any SecureStore) throws -> PersistedState {
        try loadReportingLayout(from: store).state
    }

    /// The kept state, and whether it was kept in the current (compact) layout: a state an
    /// earlier SDK wrote as JSON is rewritten once it has been read.
    static func loadReportingLayout(from store: any SecureStore) throws -> (state: PersistedState, isCompact: Bool) {
        guard let data = try store.data(for: storeKey) else { return (PersistedState(), true) }
        do {
            return try decode(data)
        } catch {
            throw KeylightError.storage("stored license state is unreadable")
        }
    }

    func save(to store: any SecureStore) throws {
        try store.set(compactEncoded(), for: Self.storeKey)
    }

    /// Forgets the license (deactivation); keeps the trial clock, the config and `lastSeen`.
    mutating func clearLicense() {
        licenseKey = nil
        instanceId = nil
        lease = nil
        rejection = nil
        leaseVerification = nil
        awaitingVerifiedLease = nil
        offlineActivation = nil
        floatingHeartbeat = nil
        leaseReceivedAt = nil
        licenseExpiresAt = nil
        customerEmail = nil
        keyTypeName = nil
        upgradeURL = nil
    }

    /// A seat and its lease are kept (a floating license without both holds no seat).
    var holdsSeat: Bool { instanceId != nil && lease != nil }

    /// Gives up a floating seat but keeps the license: the next refresh takes a seat again.
    mutating func releaseSeat() {
        instanceId = nil
        lease = nil
        leaseVerification = nil
        leaseReceivedAt = nil
    }

    /// Drops cached data that `mode` would not have accepted: under `.enforced` anything not
    /// verified, under `.informational` anything cached while verification was disabled.
    /// Returns whether anything was dropped.
    mutating func discardUnverified(for mode: VerificationMode) -> Bool {
        func unacceptable(_ how: String?) -> Bool {
            if how == Self.offlineVerification { return false }
            return switch mode {
            case .disabled: false
            case .informational: how == nil || how == "notRequested"
            case .enforced: how != "verified"
            }
        }
        var dropped = false
        if lease != nil, unacceptable(leaseVerification) {
            lease = nil
            leaseVerification = nil
            awaitingVerifiedLease = true
            dropped = true
        }
        if config != nil, unacceptable(configVerification) {
            config = nil
            configVerification = nil
            dropped = true
        }
        if dropped { lastRefresh = nil }
        return dropped
    }
}
