import Foundation
import KeylightCore

extension LicenseManager {
    /// Activates `key` on this device. On success the state is decided by the new lease, which
    /// must verify against the trusted keys; any failure leaves the state as it was.
    public func activate(key text: String) async throws {
        try await requireReadableStore()
        let key: LicenseKey
        do {
            key = try typedKey(text)
        } catch {
            lastError = error
            throw error
        }
        let machine = try await machineHash()
        let freeTierId = state == .freeTier ? stored.keylessInstanceId : nil
        let exchange = await client.activate(key: key.text, instanceName: configuration.instanceName, machineHash: machine, freeTierInstanceId: freeTierId)
        record(exchange.verification)
        let now = configuration.clock.unixSeconds
        switch exchange.reply {
        case .success(let body):
            guard isAcceptable(body.lease, instanceId: body.instance_id, key: key, now: now) else {
                lastError = .untrustedLease
                throw KeylightError.untrustedLease
            }
            keepDetails(body)
            adopt(body.lease, instanceId: body.instance_id, key: key, verification: exchange.verification.storedName,
                  heartbeat: body.heartbeat_seconds, overLimit: body.over_limit, licenseExpiresAt: body.license_expires_at, now: now)
            await flushWrites()
        case .rejected(var error), .transient(var error, _):
            // A full license: the devices holding its slots, each freeable with this key.
            error.seats = error.seats?.owned(by: key.text, thisInstance: nil)
            lastError = error
            throw error
        }
    }

    /// Reads a store that was locked at launch once more; throws ``KeylightError/storageLocked``
    /// while it still is, so nothing is activated or forgotten that could not be kept.
    func requireReadableStore() async throws {
        guard storeLocked || !loaded else { return }
        guard await loadStoredState() else { throw KeylightError.storageLocked }
        resolve()
    }

    /// The key the customer typed, if it is a key of this product.
    func typedKey(_ text: String) throws(KeylightError) -> LicenseKey {
        // An empty prefix (none configured) leaves the format's checks and the server to decide.
        guard let key = try? LicenseKey(text), configuration.keyPrefix.isEmpty || key.hasProductPrefix(configuration.keyPrefix) else {
            throw .invalidKeyFormat
        }
        return key
    }

    /// A new activation's lease is usable: signed by a trusted key, current, for this instance and key.
    func isAcceptable(_ lease: Lease, instanceId: String, key: LicenseKey, now: Int64) -> Bool {
        let verification = lease.verify(with: resolver.trustedKeys, now: now)
        return verification.isTrusted && !verification.expired && lease.instanceId == instanceId && lease.licenseKeyHash == key.keyHash
    }

    /// Makes a verified lease of a new activation (online or from a response file) the license of
    /// this device, and decides the state from it. `offline`: its seat is given back by a proof.
    /// `heartbeat`: the seat floats and must be renewed within it.
    func adopt(
        _ lease: Lease, instanceId: String, key: LicenseKey, verification: String, offline: Bool = false,
        heartbeat: Int? = nil, overLimit: Bool? = nil, licenseExpiresAt: Int64? = nil, synchronously: Bool = false, now: Int64
    ) {
        stored.licenseExpiresAt = licenseExpiresAt
        stored.offlineActivation = offline ? true : nil
        stored.floatingHeartbeat = heartbeat.map(Self.clampedHeartbeat)
        stored.leaseReceivedAt = now
        isOverLimit = overLimit ?? false
        stored.licenseKey = key.text
        stored.instanceId = instanceId
        stored.lease = lease
        stored.leaseVerification = verification
        stored.awaitingVerifiedLease = nil
        stored.rejection = nil
        stored.lastRefresh = now
        stored.lastAttempt = now
        sawServer(serverTime: lease.issuedAt)
        failures = 0
        lastError = nil
        if synchronously { persistNow() } else { persist() }
        resolve()
        schedule(now: now)
    }

    /// Frees this device's slot on the server and forgets the license; the trial (which started
    /// at the first launch) is evaluated again. Offline, nothing changes and the error is thrown.
    public func deactivate() async throws {
        try await requireReadableStore()
        guard let key = stored.licenseKey, let instanceId = stored.instanceId else { throw KeylightError.notActivated }
        let exchange = await client.deactivate(key: key, instanceId: instanceId)
        record(exchange.verification)
        switch exchange.reply {
        case .success, .rejected:
            // Rejected means the license or instance is no longer active: nothing to free.
            stored.clearLicense()
            lastError = nil
            persist()
            resolve(announcing: false)
            await flushWrites()
        case .transient(let error, _) where error.code == "NOT_FOUND":
            // The server itself (its JSON code) no longer knows this license or instance
            // (a reminted key): there is no seat to free, and the user asked to forget it.
            stored.clearLicense()
            lastError = nil
            persist()
            resolve(announcing: false)
            await flushWrites()
        case .transient(let error, _):
            lastError = error
            throw error
        }
    }
}
