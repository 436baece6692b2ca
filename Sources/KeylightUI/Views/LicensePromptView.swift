#if canImport(SwiftUI) && (os(macOS) || os(iOS) || os(visionOS))
import Keylight
import SwiftUI

/// The activation window (the hosted SDK's name): the key field, and a way out of each failure —
/// the devices holding every seat with "Free" beside each, renew, retry, offline activation, and
/// "Lost your key?". Every decision and every word is ``ActivationModel``'s; this only draws it.
///
/// ```swift
/// .sheet(isPresented: $showingActivation) { LicensePromptView(license: license) }
/// ```
public struct LicensePromptView: View {
    @StateObject private var model: ActivationModel
    @Environment(\.openURL) private var openURL
    @Environment(\.dismiss) private var dismiss
    @State private var showingOffline = false
    @State private var showingLostKey = false
    private let branding: BrandingConfig?
    /// What Close does where the view is not a presentation (an AppKit window); else `dismiss`.
    private let onClose: (() -> Void)?

    public init(license: LicenseManager, strings: UIStrings = UIStrings(), onClose: (() -> Void)? = nil) {
        _model = StateObject(wrappedValue: ActivationModel(manager: license, strings: strings))
        branding = license.configuration.branding
        self.onClose = onClose
    }

    public var body: some View {
        VStack(alignment: .leading, spacing: 14) {
            Text(model.title)
                .font(.title2.bold())
                .accessibilityAddTraits(.isHeader)
            keyField
            content
            HStack {
                Button(model.strings[.lostKeyButton]) { showingLostKey = true }
                    .buttonStyle(.borderless)
                Spacer()
                Button(model.strings[model.isBusy ? .cancelButton : .closeButton], role: .cancel) {
                    if model.isBusy { model.cancel() } else { close() }
                }
                .cancelShortcut()
                Button(model.strings[.activateButton]) { model.activate() }
                    .disabled(!model.canActivate)
                    .defaultShortcut()
            }
        }
        .padding(20)
        .frame(minWidth: 360, idealWidth: 440)
        .tint(branding?.tintColor)
        .sheet(isPresented: $showingOffline) { OfflineActivationView(license: model.manager, strings: model.strings) }
        .sheet(isPresented: $showingLostKey) { LostKeyView(license: model.manager, strings: model.strings) }
    }

    private var keyField: some View {
        VStack(alignment: .leading, spacing: 4) {
            TextField(model.strings[.keyFieldLabel], text: $model.keyText, prompt: Text(model.strings[.keyFieldPrompt]))
                .textFieldStyle(.roundedBorder)
                .font(.body.monospaced())
                .autocorrectionDisabled()
                .capitalizingCharacters()
                .disabled(model.isBusy)
                .accessibilityLabel(model.strings[.keyFieldLabel])
                .onSubmit { model.activate() }
            if let hint = model.keyHint {
                Text(hint).font(.caption).foregroundStyle(.secondary)
            }
        }
    }

    @ViewBuilder private var content: some View {
        switch model.phase {
        case .entering:
            EmptyView()
        case .activating, .freeing:
            HStack(spacing: 8) {
                ProgressView().controlSize(.small)
                Text(model.statusText ?? "")
            }
            .accessibilityElement(children: .combine)
        case .activated:
            Label(model.statusText ?? "", systemImage: "checkmark.seal.fill")
                .foregroundStyle(.green)
        case .seatsFull(let seats):
            VStack(alignment: .leading, spacing: 8) {
                Text(model.statusText ?? "").font(.headline)
                Text(model.strings[.seatsFullMessage]).font(.callout).fixedSize(horizontal: false, vertical: true)
                ForEach(seats.devices) { device in
                    HStack {
                        VStack(alignment: .leading, spacing: 2) {
                            Text(device.name)
                            Text(model.lastUsed(device)).font(.caption).foregroundStyle(.secondary)
                        }
                        Spacer()
                        Button(model.strings[.freeDeviceButton]) { model.free(device) }
                            .accessibilityLabel(model.freeLabel(device))
                    }
                    .accessibilityElement(children: .contain)
                }
            }
        case .failed(let failure):
            VStack(alignment: .leading, spacing: 6) {
                Label(failure.title, systemImage: "exclamationmark.triangle.fill")
                    .font(.headline)
                    .foregroundStyle(.orange)
                Text(failure.message).font(.callout).fixedSize(horizontal: false, vertical: true)
                HStack {
                    ForEach(failure.actions, id: \.self) { action in
                        Button(LicenseFailure.title(of: action, model.strings)) { perform(action) }
                    }
                }
            }
        }
    }

    private func close() {
        if let onClose { onClose() } else { dismiss() }
    }

    private func perform(_ action: LicenseFailure.Action) {
        switch action {
        case .renew(let url): openURL(url)
        case .activateOffline: showingOffline = true
        case .contactSupport(let email):
            if let url = URL(string: "mailto:\(email)") { openURL(url) }
        case .retry, .editKey: model.perform(action)
        }
    }
}

extension View {
    /// Return activates (where there is a keyboard).
    func defaultShortcut() -> some View {
        keyboardShortcut(.defaultAction)
    }

    /// Escape cancels.
    func cancelShortcut() -> some View {
        keyboardShortcut(.cancelAction)
    }

    /// License keys are upper case: the keyboard starts there (iOS); the model upper-cases anyway.
    @ViewBuilder func capitalizingCharacters() -> some View {
        #if os(iOS) || os(visionOS)
        textInputAutocapitalization(.characters)
        #else
        self
        #endif
    }
}

#if DEBUG
// PreviewProvider rather than #Preview: the macro's implementation ships with Xcode only, and
// the package also builds with a bare toolchain.
struct LicensePromptView_Previews: PreviewProvider {
    static var previews: some View {
        LicensePromptView(license: .preview(state: .trial(daysLeft: 5)))
    }
}
#endif
#endif
