#if canImport(SwiftUI) && (os(macOS) || os(iOS) || os(visionOS))
import Keylight
import SwiftUI

/// The license section of a Settings scene or an About box: the masked key, the licensee, the
/// kind, expiry and updates, devices in use against the limit, upgrade or renew, and "deactivate
/// this device". ``LicenseSummaryModel`` and ``PurchaseModel`` decide; this draws.
///
/// ```swift
/// Settings { LicenseSettingsView(license: license) }
/// ```
public struct LicenseSettingsView: View {
    @ObservedObject private var license: LicenseManager
    @StateObject private var summary: LicenseSummaryModel
    @StateObject private var purchase: PurchaseModel
    @State private var showingActivation = false
    @Environment(\.openURL) private var openURL

    public init(license: LicenseManager, strings: UIStrings = UIStrings()) {
        self.license = license
        _summary = StateObject(wrappedValue: LicenseSummaryModel(manager: license, strings: strings))
        _purchase = StateObject(wrappedValue: PurchaseModel(manager: license, strings: strings))
    }

    public var body: some View {
        Form {
            Section {
                ForEach(summary.rows(), id: \.self) { row in
                    LabeledContent(row.label, value: row.value)
                        .textSelection(.enabled)
                }
            }
            if let failure = summary.failure {
                Text(failure.message).foregroundStyle(.orange)
            }
            if let status = purchase.statusText {
                Text(status).foregroundStyle(.secondary)
            }
            Section {
                if purchase.url != nil {
                    Button(purchase.buttonTitle) {
                        purchase.buy { openURL($0) }
                        Task { await purchase.awaitPurchase() }
                    }
                }
                if license.licenseKey == nil {
                    Button(summary.strings[.enterKeyButton]) { showingActivation = true }
                } else {
                    Button(summary.strings[.deactivateThisDevice], role: .destructive) {
                        Task { await summary.deactivateThisDevice() }
                    }
                    .disabled(!summary.canDeactivate)
                }
            }
        }
        .task { await summary.loadDevices() }
        .sheet(isPresented: $showingActivation) { LicensePromptView(license: license, strings: summary.strings) }
    }

}

#if DEBUG
struct LicenseSettingsView_Previews: PreviewProvider {
    static var previews: some View {
        LicenseSettingsView(license: .preview(state: .licensed, entitlements: ["pro"]))
    }
}
#endif
#endif
