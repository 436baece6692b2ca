import Foundation
import Keylight

/// The trial banner: days left, and a way to buy. Shown only during a trial (or once it ended
/// without a license, as a reminder).
@MainActor
public final class TrialBannerModel: KeylightUIModel {
    public let manager: LicenseManager

    public init(manager: LicenseManager, strings: UIStrings = UIStrings()) {
        self.manager = manager
        super.init(strings: strings)
    }

    /// Whether to show the banner: never before the state is resolved, never with a license.
    public var isVisible: Bool {
        guard manager.isResolved, manager.licenseKey == nil else { return false }
        switch manager.state {
        case .trial, .expired, .freeTier: return true
        default: return false
        }
    }

    public var text: String {
        switch manager.state {
        case .trial(let days) where days == 1: strings[.trialOneDayLeft]
        case .trial(let days): strings.format(.trialDaysLeft, days)
        default: strings[.trialOver]
        }
    }

    public var buyTitle: String { strings[.buyButton] }
    public var buyURL: URL? { manager.upgradeURL }
    public var enterKeyTitle: String { strings[.enterKeyButton] }
}
