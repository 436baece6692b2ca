import Foundation

/// A change in what the user may do that an app may want to say something about, posted as
/// `Notification.Name.keylightLifecycleEvent` (the hosted SDK's names and rules).
public enum LicenseLifecycleEvent: String, Hashable, Sendable {
    /// Access ended: `.licensed` or `.trial` became `.expired`, `.limited` or `.invalid`.
    /// Not posted for the first state of a launch, nor for the user's own deactivation.
    case expired
    /// Access came back: `.expired`, `.limited` or `.invalid` became `.licensed` or `.trial`.
    /// Not posted for the first state of a launch.
    case restored
    /// A current license now ends later (a renewal), or no longer ends (a lifetime upgrade). The
    /// notification's `userInfo` holds `previousLicenseExpiresAt` and, unless the license no
    /// longer ends, `newLicenseExpiresAt` (`Date`s).
    case renewed
}

extension Notification.Name {
    /// Posted by `LicenseManager` with a ``LicenseLifecycleEvent`` under `userInfo["lifecycleEvent"]`;
    /// `object` is the manager.
    public static let keylightLifecycleEvent = Notification.Name("KeylightLifecycleEvent")
}

/// One event to post and its `userInfo`.
struct LifecycleNotice: Equatable, Sendable {
    var event: LicenseLifecycleEvent
    var previousLicenseExpiresAt: Date?
    var newLicenseExpiresAt: Date?

    var userInfo: [String: Any] {
        var info: [String: Any] = ["lifecycleEvent": event]
        if let previousLicenseExpiresAt { info["previousLicenseExpiresAt"] = previousLicenseExpiresAt }
        if let newLicenseExpiresAt { info["newLicenseExpiresAt"] = newLicenseExpiresAt }
        return info
    }
}

/// Decides which state changes are lifecycle events. The first state of a launch is where the
/// app starts, not a change, so it is only remembered.
struct LifecycleTracker: Sendable {
    private var started = false
    /// The license's end while it was last `.licensed` (nil: it does not end).
    private var licensedUntil: Int64?

    mutating func transition(from old: LicenseState, to new: LicenseState, licenseExpiresAt: Int64?, announcing: Bool) -> LifecycleNotice? {
        defer {
            started = true
            if new == .licensed { licensedUntil = licenseExpiresAt }
        }
        guard started, announcing else { return nil }
        if Self.grants(old), Self.denies(new) { return LifecycleNotice(event: .expired) }
        if Self.denies(old), Self.grants(new) { return LifecycleNotice(event: .restored) }
        if old == .licensed, new == .licensed, let previous = licensedUntil {
            let renewed = licenseExpiresAt.map { $0 > previous } ?? true
            if renewed {
                return LifecycleNotice(
                    event: .renewed, previousLicenseExpiresAt: Date(timeIntervalSince1970: TimeInterval(previous)),
                    newLicenseExpiresAt: licenseExpiresAt.map { Date(timeIntervalSince1970: TimeInterval($0)) }
                )
            }
        }
        return nil
    }

    private static func grants(_ state: LicenseState) -> Bool {
        switch state {
        case .licensed, .trial: true
        default: false
        }
    }

    private static func denies(_ state: LicenseState) -> Bool {
        switch state {
        case .expired, .limited, .invalid: true
        default: false
        }
    }
}
