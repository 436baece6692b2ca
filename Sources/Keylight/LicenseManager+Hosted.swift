import Foundation
import KeylightCore

// The hosted SDK's names for what the manager already has, and its trial and beacon calls.
extension LicenseManager {
    /// The current state (the hosted SDK's name for ``state``).
    public var licenseState: LicenseState { state }

    /// The entitlement codes granted now (the hosted SDK's name for ``entitlements``): the
    /// license's when `.licensed`, the fallback ones when `.limited`, none otherwise. A running
    /// trial grants every feature through ``hasEntitlement(_:)`` without listing codes here.
    public var currentEntitlements: [String] { entitlements }

    /// When the license itself ends, as the server last said (nil: it does not end, or no license).
    public var licenseExpiresAt: Date? { stored.licenseExpiresAt.map { Date(timeIntervalSince1970: TimeInterval($0)) } }

    /// The app's branding, from the configuration (the hosted SDK's `branding:`).
    public var branding: BrandingConfig? { configuration.branding }

    /// The trial alone, whatever the license: not started before the first ``checkOnLaunch()``,
    /// then running with its days left, then over. Its length is the server's signed config's, or
    /// the configured seed until one has been verified.
    public func checkTrialStatus() -> TrialStatus {
        resolver.trialStatus(stored, now: configuration.clock.unixSeconds)
    }

    /// Sends the keyless beacon now with `state` (installs without a license; the manager also
    /// sends it on its own, at most daily). Fire-and-forget: a failure is kept in ``lastError``
    /// and changes nothing; with a license on this device nothing is sent.
    public func reportKeylessState(_ state: KeylessReportState) async {
        guard configuration.sendsKeylessBeacon, await ensureLoaded(), stored.licenseKey == nil else { return }
        if stored.keylessInstanceId == nil {
            stored.keylessInstanceId = UUID().uuidString.lowercased()
            persist()
        }
        guard let instanceId = stored.keylessInstanceId, let machine = try? await machineHash() else { return }
        let exchange = await client.keyless(instanceId: instanceId, state: state.rawValue, machineHash: machine)
        record(exchange.verification)
        switch exchange.reply {
        case .success:
            stored.lastBeacon = configuration.clock.unixSeconds
            persist()
            await flushWrites()
        case .rejected(let error), .transient(let error, _):
            lastError = error
        }
    }
}
