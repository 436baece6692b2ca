import Foundation
import KeylightCore

/// The hosted SDK's provider: what a ``LicenseManager`` is made from. Here it is the
/// configuration and a view of what the store keeps, for code written against the hosted SDK.
public struct KeylightProvider: Sendable {
    public let configuration: KeylightConfiguration

    public init(configuration: KeylightConfiguration) {
        self.configuration = configuration
    }

    /// This SDK's version (the same as `Keylight.sdkVersion`).
    public static let sdkVersion = Keylight.sdkVersion

    /// Whether the device clock reads more than an hour before the server's time at the last
    /// verified contact (a clock set back to stretch a lease): read from the store, so it can be
    /// asked before, or without, a manager. False when nothing is stored or the store cannot be read.
    public func isClockManipulated() -> Bool {
        let stored = try? PersistedState.load(from: configuration.store)
        return LicenseResolver.isClockManipulated(serverSeen: stored?.serverSeen, now: configuration.clock.unixSeconds)
    }

    /// Whether a license key is kept on this device (activated, whatever its state).
    public func hasStoredLicense() -> Bool {
        ((try? PersistedState.load(from: configuration.store))?.licenseKey) != nil
    }
}

extension LicenseManager {
    /// A manager made from a provider, as the hosted SDK makes them.
    public convenience init(provider: KeylightProvider) {
        self.init(configuration: provider.configuration)
    }

    /// The provider view of this manager's configuration.
    public var provider: KeylightProvider { KeylightProvider(configuration: configuration) }
}
