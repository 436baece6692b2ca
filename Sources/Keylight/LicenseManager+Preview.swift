import Foundation
import KeylightCore

extension LicenseManager {
    /// A manager already resolved to `state`, for SwiftUI previews and UI tests: it keeps nothing,
    /// sends nothing, and never changes on its own.
    ///
    /// ```swift
    /// #Preview("Trial") { ContentView().environmentObject(LicenseManager.preview(state: .trial(daysLeft: 3))) }
    /// ```
    public static func preview(state: LicenseState, entitlements: [String] = [], reason: LicenseState.Reason? = nil) -> LicenseManager {
        let configuration = Configuration(
            serverURL: URL(string: "https://preview.invalid")!, tenantId: "preview", productId: "preview", sdkKey: "preview",
            keyPrefix: "", trustedKeys: [:], appVersion: nil, instanceName: "Preview", appReleaseDate: nil,
            store: InMemoryStore(), transport: PreviewTransport(), maxOfflineDays: nil
        )
        let manager = LicenseManager(configuration: configuration)
        manager.isPreview = true
        manager.loaded = true
        manager.state = state
        manager.entitlements = entitlements
        manager.stateReason = reason
        manager.reason = "preview"
        manager.isResolved = true
        return manager
    }
}

/// A preview's transport: nothing leaves the process.
struct PreviewTransport: Transport {
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        throw KeylightError.configuration("a preview manager sends nothing")
    }
}
