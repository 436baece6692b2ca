import Foundation
import KeylightCore

extension LicenseManager {
    /// Talks to the server if the refresh policy says it is time (or `force`): validates the
    /// license, or for keyless installs fetches the signed config and sends the daily beacon.
    /// Transient failures keep the state and schedule a retry; only the server's explicit
    /// refusal turns a license `.invalid`.
    public func refreshIfNeeded(force: Bool = false) async {
        // Nothing is known before the store has been read (a locked Keychain is read again on a
        // timer), and nothing is written over what it keeps.
        guard await ensureLoaded() else { return }
        let policy = configuration.refreshPolicy
        let now = configuration.clock.unixSeconds
        let due = if let heartbeat = floatingHeartbeat {
            policy.isHeartbeatDue(lastRefresh: stored.lastRefresh, lastAttempt: stored.lastAttempt, heartbeat: heartbeat, holdsSeat: stored.holdsSeat, now: now)
        } else {
            policy.isDue(lastRefresh: stored.lastRefresh, lastAttempt: stored.lastAttempt, leaseExpiresAt: stored.lease?.expiresAt, now: now)
        }
        guard force || due else {
            schedule(now: now)
            return
        }
        stored.lastAttempt = now
        let outcome: (error: KeylightError, retryAfter: Int?)?
        if let key = stored.licenseKey, let instanceId = stored.instanceId, stored.rejection == nil || recheckRefusal {
            recheckRefusal = false
            outcome = await refreshLicense(key: key, instanceId: instanceId, now: now)
        } else if let key = stored.licenseKey, floatingHeartbeat != nil, stored.rejection == nil || recheckRefusal {
            // Without a seat (given back, or lapsed); a refusal kept from then is asked about again at launch.
            recheckRefusal = false
            outcome = await takeSeat(key: key, now: now)
        } else if stored.licenseKey == nil {
            outcome = await refreshKeyless(now: now)
        } else {
            outcome = nil  // refused license: asked again at the next launch, or when the user activates again
        }
        persist()
        resolve()
        if let outcome, Self.needsANewBuild(outcome.error) {
            // App Transport Security, the sandbox, a transport that is not there: asking again
            // changes nothing until the app is fixed, so nothing is scheduled (the next launch asks).
            lastError = outcome.error
            scheduledRefresh?.cancel()
            nextRefreshAt = nil
        } else if let outcome {
            lastError = outcome.error
            failures += 1
            // Backoff, but never more often than the debounce: a failing server is not hammered
            // (a floating seat retries within its heartbeat instead, or the server frees it).
            let backoff = policy.backoff(attempt: failures, retryAfter: outcome.retryAfter, using: &random)
            let delay = if let heartbeat = floatingHeartbeat {
                policy.heartbeatRetryDelay(backoff: backoff, retryAfter: outcome.retryAfter, heartbeat: heartbeat)
            } else {
                max(backoff, Double(policy.debounce))
            }
            scheduleRetry(after: delay, now: now)
        } else {
            failures = 0
            schedule(now: now)
        }
        await flushWrites()
    }

    /// Errors only a change to the app itself can lift.
    static func needsANewBuild(_ error: KeylightError) -> Bool {
        [.appTransportSecurity, .missingNetworkEntitlement, .configuration].contains(error.kind)
    }

    private func refreshLicense(key: String, instanceId: String, now: Int64) async -> (KeylightError, Int?)? {
        // Never an empty machine_hash: a store read failure is transient, retried later.
        guard let machine = try? await machineHash() else { return (.storage("the device identity could not be read"), nil) }
        let exchange = await client.validate(key: key, instanceId: instanceId, machineHash: machine)
        record(exchange.verification)
        switch exchange.reply {
        case .success(let body):
            let verification = body.lease.verify(with: resolver.trustedKeys, now: now)
            // A lease this app cannot trust grants nothing and changes nothing.
            // Nor does one that is expired, or older than the lease kept: a replay of an old answer.
            guard verification.isTrusted, !verification.expired, body.lease.instanceId == instanceId,
                  body.lease.licenseKeyHash == LicenseKey.hash(normalizing: key),
                  body.lease.issuedAt >= (stored.lease?.issuedAt ?? .min) else {
                return (.untrustedLease, nil)
            }
            // A refusal is lifted only by a lease issued after the one kept, never by the kept one replayed.
            if stored.rejection != nil, body.lease.issuedAt <= (stored.lease?.issuedAt ?? .min) {
                return (.untrustedLease, nil)
            }
            stored.lease = body.lease
            stored.leaseVerification = exchange.verification.storedName
            stored.awaitingVerifiedLease = nil
            stored.rejection = nil  // a refused license that the server accepts again (reinstated)
            if let config = resolver.freshConfig(body.config, replacing: stored.config, now: now) {
                stored.config = config
                stored.configVerification = exchange.verification.storedName
            }
            stored.lastRefresh = now
            stored.floatingHeartbeat = body.heartbeat_seconds.map(Self.clampedHeartbeat)
            stored.leaseReceivedAt = now
            stored.licenseExpiresAt = body.license_expires_at
            keepDetails(body)
            isOverLimit = body.over_limit ?? false
            sawServer(serverTime: body.lease.issuedAt)
            lastError = nil
            return nil
        case .rejected(let error) where error.code == "INSTANCE_INACTIVE" && floatingHeartbeat != nil:
            // A floating seat that lapsed (the app slept, or was offline past its heartbeat) is
            // not a verdict on the license: take a seat again if one is free.
            return await takeSeat(key: key, now: now)
        case .rejected(let error):
            keepRefusal(error, now: now)
            return nil
        case .transient(let error, let retryAfter):
            return (error, retryAfter)
        }
    }

    private func refreshKeyless(now: Int64) async -> (KeylightError, Int?)? {
        let policy = configuration.refreshPolicy
        let beaconDue = configuration.sendsKeylessBeacon && (stored.lastBeacon.map { now - $0 >= policy.beaconInterval } ?? true)
        let config: SignedProductConfig
        let verification: SignatureCheck
        if beaconDue {
            if stored.keylessInstanceId == nil { stored.keylessInstanceId = UUID().uuidString.lowercased() }
            // Protocol 6.1: a trial that ran out (and no free tier) reports `expired`.
            let keylessState = switch state {
            case .freeTier: "free_tier"
            case .expired: "expired"
            default: "trial"
            }
            guard let machine = try? await machineHash() else { return (.storage("the device identity could not be read"), nil) }
            let exchange = await client.keyless(instanceId: stored.keylessInstanceId!, state: keylessState, machineHash: machine)
            record(exchange.verification)
            verification = exchange.verification
            switch exchange.reply {
            case .success(let body):
                stored.lastBeacon = now
                config = body.config
            case .rejected(let error), .transient(let error, nil):
                return (error, nil)
            case .transient(let error, let retryAfter):
                return (error, retryAfter)
            }
        } else {
            let exchange = await client.config()
            record(exchange.verification)
            verification = exchange.verification
            switch exchange.reply {
            case .success(let body): config = body
            case .rejected(let error): return (error, nil)
            case .transient(let error, let retryAfter): return (error, retryAfter)
            }
        }
        // A config must be trusted, current and no older than the one kept: an old signed config
        // replayed by a man in the middle (say, with the free tier on) is refused.
        guard let trusted = resolver.freshConfig(config, replacing: stored.config, now: now) else { return (.untrustedLease, nil) }
        stored.config = trusted
        stored.configVerification = verification.storedName
        stored.lastRefresh = now
        sawServer(serverTime: trusted.issuedAt)
        lastError = nil
        return nil
    }

    /// Keeps the server's verdict on the license (revoked, suspended, instance gone): the state is
    /// `.invalid` until a later answer lifts it (asked again at each launch).
    func keepRefusal(_ error: KeylightError, now: Int64) {
        stored.rejection = error.code
        stored.lastRefresh = now
        lastError = error
    }

    /// Schedules the next routine refresh (before the lease ends, or when data goes stale; a
    /// floating seat at its heartbeat interval).
    func schedule(now: Int64) {
        var at = configuration.refreshPolicy.nextRefresh(lastRefresh: stored.lastRefresh, leaseExpiresAt: stored.lease?.expiresAt, now: now)
        if let heartbeat = floatingHeartbeat, stored.rejection == nil {
            at = max(now + 1, (stored.lastRefresh ?? now) + RefreshPolicy.heartbeatInterval(heartbeat))
        }
        scheduleRetry(after: Double(at - now), now: now)
    }

    func scheduleRetry(after seconds: Double, now: Int64) {
        nextRefreshAt = Date(timeIntervalSince1970: TimeInterval(now) + seconds)
        scheduledRefresh?.cancel()
        scheduledRefresh = Task { [weak self] in
            try? await Task.sleep(for: .seconds(seconds))
            guard !Task.isCancelled else { return }
            await self?.refreshIfNeeded(force: true)
        }
    }
}
