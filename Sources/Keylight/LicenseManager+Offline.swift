import Foundation
import KeylightCore

extension LicenseManager {
    /// The activation request file for this device (see ``OfflineActivation``).
    public func offlineActivationRequest() throws -> String {
        try OfflineActivation.request(configuration: configuration)
    }

    /// Imports an offline activation response, without the network. It must carry a lease signed
    /// by a key this app trusts, not expired, for `key` (the key the customer typed), and be
    /// bound to this device (its machine hash and the device key of its request). Any failure
    /// leaves the state as it was. Afterwards the state follows the lease like any other: a
    /// lease that runs out is `.expired` until a new response (or the server) renews it.
    public func activate(offlineResponse text: String, key keyText: String) throws {
        do {
            try importOfflineResponse(text, key: keyText)
        } catch let error as KeylightError {
            lastError = error
            throw error
        }
    }

    private func importOfflineResponse(_ text: String, key keyText: String) throws {
        let key = try typedKey(keyText)
        let response: OfflineActivationResponse
        do {
            response = try OfflineActivationResponse(armored: text)
        } catch {
            throw KeylightError.offlineFile(error.description)
        }
        let now = configuration.clock.unixSeconds
        let verification = response.lease.verify(with: resolver.trustedKeys, now: now)
        guard verification.isTrusted else { throw KeylightError.untrustedLease }
        guard !verification.expired else { throw KeylightError.offlineFile("This activation has expired; make a new request.") }
        guard response.lease.licenseKeyHash == key.keyHash else { throw KeylightError.offlineFile("This activation is for another license key.") }
        guard let deviceKey = try DeviceKey.existing(in: configuration.store),
              response.isBound(to: try machineHashNow(), deviceKey: deviceKey.publicKey, keyset: resolver.trustedKeys) else {
            throw KeylightError.offlineFile("This activation was made for another device.")
        }
        if stored.surrenderedInstances?.contains(response.instanceId) == true {
            throw KeylightError.offlineFile("This device gave that activation up with a deactivation proof: submit the proof first, then make a new request.")
        }
        if let current = stored.lease, current.instanceId == response.instanceId, current.issuedAt > response.lease.issuedAt {
            throw KeylightError.offlineFile("A newer activation of this device is already in use.")
        }
        if let config = resolver.freshConfig(response.config, replacing: stored.config, now: now) {
            stored.config = config
            stored.configVerification = PersistedState.offlineVerification
        }
        // Not a response signature, but the lease's own signature and the binding to this device.
        adopt(response.lease, instanceId: response.instanceId, key: key, verification: PersistedState.offlineVerification, offline: true,
              synchronously: true, now: now)
    }

    /// Gives this device's seat back without the network: signs a deactivation proof with the
    /// device key of its offline request, forgets the license here (so the seat cannot be freed
    /// and still used), and returns the proof for the customer to submit (portal or
    /// ``submitDeactivationProof(_:key:)`` on a machine online). The proof is kept in
    /// ``pendingDeactivationProof`` until submitted from here, so it can be shown again.
    public func offlineDeactivationProof() throws -> String {
        guard stored.licenseKey != nil, let instanceId = stored.instanceId else { throw KeylightError.notActivated }
        guard stored.offlineActivation == true, let deviceKey = try DeviceKey.existing(in: configuration.store) else {
            throw KeylightError.offlineFile("This device was activated online: deactivate it online, or free it in the customer portal.")
        }
        let proof: String
        do {
            proof = try OfflineDeactivationProof.sign(instanceId: instanceId, issuedAt: max(0, configuration.clock.unixSeconds), with: deviceKey).armored
        } catch {
            throw KeylightError.storage("the device key could not sign: \(error)")
        }
        stored.clearLicense()
        stored.pendingDeactivationProof = proof
        stored.surrenderedInstances = Array(((stored.surrenderedInstances ?? []) + [instanceId]).suffix(PersistedState.surrenderLimit))
        lastError = nil
        // On the store before the proof is handed out: a proof whose license is still kept here
        // would free the seat while this device stays licensed.
        persistNow()
        resolve(announcing: false)
        return proof
    }

    /// The last deactivation proof this device made and has not submitted itself.
    public var pendingDeactivationProof: String? { stored.pendingDeactivationProof }

    /// Online, on behalf of an offline device: turns its request file into a response file for
    /// the license `key` (the same cap as ``activate(key:)``; a full license throws
    /// `ACTIVATION_LIMIT_REACHED` with ``KeylightError/seats``).
    public func offlineActivationResponse(forRequest request: String, key keyText: String) async throws -> String {
        let key = try typedKey(keyText)
        let exchange = await client.offlineActivate(key: key.text, request: request)
        record(exchange.verification)
        switch exchange.reply {
        case .success(let body):
            return body.response
        case .rejected(var error), .transient(var error, _):
            error.seats = error.seats?.owned(by: key.text, thisInstance: nil)
            throw error
        }
    }

    /// Online: submits an offline device's deactivation proof, freeing its seat.
    public func submitDeactivationProof(_ proof: String, key keyText: String) async throws {
        let key = try typedKey(keyText)
        let exchange = await client.offlineDeactivate(key: key.text, proof: proof)
        record(exchange.verification)
        switch exchange.reply {
        case .success:
            if stored.pendingDeactivationProof == proof {
                stored.pendingDeactivationProof = nil
                persist()
                await flushWrites()
            }
        case .rejected(let error), .transient(let error, _):
            throw error
        }
    }
}
