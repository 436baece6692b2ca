#if canImport(SwiftUI) && (os(macOS) || os(iOS) || os(visionOS))
import Keylight
import SwiftUI

/// A banner for the top of a window during the trial: days left, Buy, and Enter license key.
/// Shows nothing with a license, or before the state is resolved.
///
/// ```swift
/// VStack(spacing: 0) { TrialBannerView(license: license) { showingActivation = true }; ContentView() }
/// ```
public struct TrialBannerView: View {
    @ObservedObject private var license: LicenseManager
    private let model: TrialBannerModel
    private let enterKey: () -> Void
    @Environment(\.openURL) private var openURL

    public init(license: LicenseManager, strings: UIStrings = UIStrings(), enterKey: @escaping () -> Void) {
        self.license = license
        self.model = TrialBannerModel(manager: license, strings: strings)
        self.enterKey = enterKey
    }

    public var body: some View {
        if model.isVisible {
            HStack(spacing: 12) {
                Image(systemName: "clock").accessibilityHidden(true)
                Text(model.text)
                Spacer()
                Button(model.enterKeyTitle, action: enterKey)
                if let url = model.buyURL {
                    Button(model.buyTitle) { openURL(url) }
                        .buttonStyle(.borderedProminent)
                }
            }
            .padding(.horizontal, 16)
            .padding(.vertical, 8)
            .background(.thinMaterial)
            .tint(license.configuration.branding?.tintColor)
            .accessibilityElement(children: .contain)
        }
    }
}

#if DEBUG
struct TrialBannerView_Previews: PreviewProvider {
    static var previews: some View {
        TrialBannerView(license: .preview(state: .trial(daysLeft: 5))) {}
    }
}
#endif
#endif
