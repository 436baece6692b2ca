#if canImport(SwiftUI) && (os(macOS) || os(iOS) || os(visionOS))
import Keylight
import SwiftUI

/// "Lost your key?": the address the license was bought with; the server mails its keys there.
struct LostKeyView: View {
    @StateObject private var model: LostKeyModel
    @Environment(\.dismiss) private var dismiss

    init(license: LicenseManager, strings: UIStrings) {
        _model = StateObject(wrappedValue: LostKeyModel(manager: license, strings: strings))
    }

    var body: some View {
        VStack(alignment: .leading, spacing: 12) {
            Text(model.strings[.lostKeyTitle]).font(.title3.bold()).accessibilityAddTraits(.isHeader)
            Text(model.strings[.lostKeyMessage]).fixedSize(horizontal: false, vertical: true)
            TextField(model.strings[.emailLabel], text: $model.email)
                .textFieldStyle(.roundedBorder)
                .autocorrectionDisabled()
                .emailKeyboard()
                .onSubmit { Task { await model.send() } }
            if let hint = model.emailHint { Text(hint).font(.caption).foregroundStyle(.secondary) }
            switch model.phase {
            case .entering: EmptyView()
            case .sending: ProgressView().controlSize(.small)
            case .sent(let notice): Text(notice).fixedSize(horizontal: false, vertical: true)
            case .failed(let failure): Text(failure.message).foregroundStyle(.orange)
            }
            HStack {
                Spacer()
                Button(model.strings[.closeButton], role: .cancel) { dismiss() }
                    .cancelShortcut()
                Button(model.strings[.sendButton]) { Task { await model.send() } }
                    .disabled(!model.canSend)
                    .defaultShortcut()
            }
        }
        .padding(20)
        .frame(minWidth: 340)
    }
}

extension View {
    /// The email keyboard and content type where there is one (iOS).
    @ViewBuilder func emailKeyboard() -> some View {
        #if os(iOS) || os(visionOS)
        keyboardType(.emailAddress).textContentType(.emailAddress).textInputAutocapitalization(.never)
        #else
        self
        #endif
    }
}
#endif
