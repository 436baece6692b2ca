import Foundation
import KeylightCore

extension LicenseManager {
    /// Activates `key` on this device. On success the state is decided by the new lease, which
    /// must verify against the trusted keys; any failure leaves the state as it was.
    public func activate(key text: String) async throws {
        guard let key = try? LicenseKey(text), key.hasProductPrefix(configuration.keyPrefix) else {
            lastError = .invalidKeyFormat
            throw KeylightError.invalidKeyFormat
        }
        let machine = try machineHash()
        let freeTierId = state == .freeTier ? stored.keylessInstanceId : nil
        let exchange = await client.activate(key: key.text, instanceName: configuration.instanceName, machineHash: machine, freeTierInstanceId: freeTierId)
        record(exchange.verification)
        let now = configuration.clock.unixSeconds
        switch exchange.reply {
        case .success(let body):
            let verification = body.lease.verify(with: resolver.trustedKeys, now: now)
            guard verification.isTrusted, !verification.expired, body.lease.instanceId == body.instance_id,
                  body.lease.licenseKeyHash == key.keyHash else {
                lastError = .untrustedLease
                throw KeylightError.untrustedLease
            }
            stored.licenseKey = key.text
            stored.instanceId = body.instance_id
            stored.lease = body.lease
            stored.leaseVerification = exchange.verification.storedName
            stored.awaitingVerifiedLease = nil
            stored.rejection = nil
            stored.lastRefresh = now
            stored.lastAttempt = now
            sawServer(serverTime: body.lease.issuedAt)
            failures = 0
            lastError = nil
            persist()
            resolve()
            schedule(now: now)
        case .rejected(var error), .transient(var error, _):
            // A full license: the devices holding its slots, each freeable with this key.
            error.seats = error.seats?.owned(by: key.text, thisInstance: nil)
            lastError = error
            throw error
        }
    }

    /// Frees this device's slot on the server and forgets the license; the trial (which started
    /// at the first launch) is evaluated again. Offline, nothing changes and the error is thrown.
    public func deactivate() async throws {
        guard let key = stored.licenseKey, let instanceId = stored.instanceId else { throw KeylightError.notActivated }
        let exchange = await client.deactivate(key: key, instanceId: instanceId)
        record(exchange.verification)
        switch exchange.reply {
        case .success, .rejected:
            // Rejected means the license or instance is no longer active: nothing to free.
            stored.clearLicense()
            lastError = nil
            persist()
            resolve()
        case .transient(let error, _) where error.code == "NOT_FOUND":
            // The server itself (its JSON code) no longer knows this license or instance
            // (a reminted key): there is no seat to free, and the user asked to forget it.
            stored.clearLicense()
            lastError = nil
            persist()
            resolve()
        case .transient(let error, _):
            lastError = error
            throw error
        }
    }
}
