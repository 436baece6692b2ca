import Foundation
import KeylightCore

extension LicenseManager {
    /// The license's seats float: one is held only while this app keeps validating (every
    /// heartbeat, which the manager does on its own), and is given back at quit with ``releaseSeat(timeout:)``.
    public var isFloating: Bool { floatingHeartbeat != nil }

    var floatingHeartbeat: Int? { stored.floatingHeartbeat }

    /// The server's heartbeat, within what it may be (a hostile value cannot make the app spin or sleep for ever).
    static func clampedHeartbeat(_ seconds: Int) -> Int { min(max(seconds, 10), 86_400) }

    /// Gives a floating license's seat back so another device can take it at once; call it when the
    /// app quits (from `applicationShouldTerminate`, awaiting it before replying, or a task in
    /// `applicationWillTerminate`). The license key is kept: the next launch, or
    /// ``refreshIfNeeded(force:)``, takes a seat again. Answers whether a seat was given back; if the
    /// server cannot be reached, the seat is freed by the server once its heartbeat passes.
    ///
    /// Bounded: after `timeout` seconds (2 by default) it answers false and the app may quit; the
    /// server frees the seat at its heartbeat.
    @discardableResult
    public func releaseSeat(timeout: Double = 2) async -> Bool {
        guard await ensureLoaded(), isFloating, let key = stored.licenseKey, let instanceId = stored.instanceId else { return false }
        let client = client
        guard let exchange = await withDeadline(seconds: timeout, { await client.deactivate(key: key, instanceId: instanceId) }) else {
            lastError = .transient("the server did not answer within \(timeout) s; it frees the seat once the heartbeat passes")
            return false
        }
        record(exchange.verification)
        switch exchange.reply {
        case .success, .rejected:
            scheduledRefresh?.cancel()
            nextRefreshAt = nil
            stored.releaseSeat()
            // The next launch asks for a seat at once, however soon it comes.
            stored.lastAttempt = nil
            persist()
            resolve()
            await flushWrites()
            return true
        case .transient(let error, _):
            lastError = error
            return false
        }
    }

    /// Takes a floating seat with the kept key: at launch after a seat was given back, or when the
    /// server freed a lapsed one. A full license leaves the state `.limited` and is retried within
    /// the heartbeat; the server's refusal of the license itself is kept as for any license.
    func takeSeat(key text: String, now: Int64) async -> (KeylightError, Int?)? {
        guard let key = try? LicenseKey(text) else { return (.invalidKeyFormat, nil) }
        guard let machine = try? await machineHash() else { return (.storage("the device identity could not be read"), nil) }
        // Whatever happens next, the old seat is over.
        stored.releaseSeat()
        let exchange = await client.activate(key: key.text, instanceName: configuration.instanceName, machineHash: machine, freeTierInstanceId: nil)
        record(exchange.verification)
        switch exchange.reply {
        case .success(let body):
            guard isAcceptable(body.lease, instanceId: body.instance_id, key: key, now: now) else { return (.untrustedLease, nil) }
            keepDetails(body)
            adopt(body.lease, instanceId: body.instance_id, key: key, verification: exchange.verification.storedName,
                  heartbeat: body.heartbeat_seconds, overLimit: body.over_limit, licenseExpiresAt: body.license_expires_at, now: now)
            return nil
        case .rejected(let error):
            keepRefusal(error, now: now)
            return nil
        case .transient(var error, let retryAfter):
            error.seats = error.seats?.owned(by: key.text, thisInstance: nil)
            return (error, retryAfter)
        }
    }
}
