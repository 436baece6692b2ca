import Foundation
import Keylight

/// "Restore App Store purchase": the SDK's App Store exchange (StoreKit's current entitlements,
/// exchanged for this product's license). Apple platforms only; elsewhere ``isAvailable`` is false.
@MainActor
public final class RestorePurchaseModel: KeylightUIModel {
    public enum Phase: Hashable, Sendable {
        case idle, restoring, restored
        case failed(LicenseFailure)
    }

    public let manager: LicenseManager
    public private(set) var phase: Phase = .idle { willSet { changing() } }
    let restore: (@MainActor () async throws -> Void)?

    /// `restore`: the exchange (tests inject one); the SDK's App Store exchange by default.
    public init(manager: LicenseManager, strings: UIStrings = UIStrings(), restore: (@MainActor () async throws -> Void)? = nil) {
        self.manager = manager
        self.restore = restore ?? Self.appStoreRestore(manager)
        super.init(strings: strings)
    }

    public var isAvailable: Bool { restore != nil }
    public var buttonTitle: String { strings[.restoreButton] }
    public var statusText: String? {
        switch phase {
        case .restoring: strings[.restoring]
        case .failed(let failure): failure.message
        default: nil
        }
    }

    public func run() async {
        guard let restore else { return }
        if case .restoring = phase { return }
        phase = .restoring
        do {
            try await restore()
            phase = .restored
        } catch {
            let keylight = (error as? KeylightError) ?? .transient("\(error)")
            phase = .failed(LicenseFailure(keylight, strings: strings, renewURL: nil, supportEmail: manager.configuration.branding?.supportEmail))
        }
    }

    static func appStoreRestore(_ manager: LicenseManager) -> (@MainActor () async throws -> Void)? {
        #if canImport(StoreKit)
        return { try await manager.activateFromAppStore() }
        #else
        return nil
        #endif
    }
}
