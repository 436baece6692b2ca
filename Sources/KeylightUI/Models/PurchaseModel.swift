import Foundation
import Keylight

/// Buy, upgrade, renew: opens the page (the license's own upgrade page when the server offers
/// one, else the product's purchase page), then, when the user comes back, validates until the
/// license changes, for a bounded time (the payment's webhook may take a while to arrive).
@MainActor
public final class PurchaseModel: KeylightUIModel {
    public enum Phase: Hashable, Sendable {
        case idle
        case waiting
        case updated
        /// The bound passed without a change: try again later.
        case notYet
    }

    public let manager: LicenseManager
    public private(set) var phase: Phase = .idle { willSet { changing() } }
    /// How long ``awaitPurchase()`` keeps asking, and its first pause.
    let timeout: Double
    let initialDelay: Double

    public init(manager: LicenseManager, strings: UIStrings = UIStrings(), timeout: Double = 180, initialDelay: Double = 2) {
        self.manager = manager
        self.timeout = timeout
        self.initialDelay = initialDelay
        super.init(strings: strings)
    }

    /// The page the button opens: the license's upgrade page, or the purchase page.
    public var url: URL? { manager.upgradeURL }

    /// "Upgrade or renew" with a license, "Buy a license" without.
    public var buttonTitle: String { manager.licenseKey == nil ? strings[.buyButton] : strings[.upgradeButton] }

    public var statusText: String? {
        switch phase {
        case .idle: nil
        case .waiting: strings[.waitingForPurchase]
        case .updated: strings[.purchaseArrived]
        case .notYet: strings[.purchaseNotYet]
        }
    }

    /// Opens the page with `open` (the view's `openURL`, which app extensions may use too). With
    /// a license, ``awaitPurchase()`` then waits for the upgrade to arrive.
    public func buy(using open: (URL) -> Void) {
        guard let url else { return }
        open(url)
    }

    /// Validates until the license changes or the bound passes (the SDK's ``LicenseManager/refreshAfterUpgrade(timeout:initialDelay:)``).
    public func awaitPurchase() async {
        guard manager.licenseKey != nil else { return }
        phase = .waiting
        let changed = await manager.refreshAfterUpgrade(timeout: timeout, initialDelay: initialDelay)
        phase = changed ? .updated : .notYet
    }
}
