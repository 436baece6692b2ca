#if canImport(SwiftUI) && (os(macOS) || os(iOS) || os(visionOS))
import Keylight
import SwiftUI
import UniformTypeIdentifiers
#if os(macOS)
import AppKit
#else
import UIKit
#endif

/// Offline activation: the request as a file to share and as a QR code, then the response file
/// imported for the key. ``OfflineActivationModel`` decides; this draws.
struct OfflineActivationView: View {
    @StateObject private var model: OfflineActivationModel
    @Environment(\.dismiss) private var dismiss
    @State private var importing = false
    @State private var requestFile: URL?
    /// The request's QR code, drawn once.
    @State private var code: Image?

    init(license: LicenseManager, strings: UIStrings) {
        _model = StateObject(wrappedValue: OfflineActivationModel(manager: license, strings: strings))
    }

    var body: some View {
        VStack(alignment: .leading, spacing: 12) {
            Text(model.strings[.offlineIntro]).font(.headline)
            ForEach(model.steps, id: \.self) { Text($0).fixedSize(horizontal: false, vertical: true) }
            if let code {
                code.interpolation(.none).resizable().scaledToFit().frame(maxWidth: 220, maxHeight: 220)
                    .accessibilityHidden(true)
            }
            if let failure = model.requestError ?? model.failure {
                Text(failure.message).foregroundStyle(.orange).fixedSize(horizontal: false, vertical: true)
            }
            TextField(model.strings[.keyFieldLabel], text: $model.keyText)
                .textFieldStyle(.roundedBorder)
                .font(.body.monospaced())
                .autocorrectionDisabled()
                .capitalizingCharacters()
            HStack {
                if let requestFile {
                    ShareLink(item: requestFile) { Text(model.strings[.saveRequestButton]) }
                }
                Button(model.strings[.importResponseButton]) { importing = true }
                Spacer()
                Button(model.strings[.closeButton], role: .cancel) { dismiss() }
                    .cancelShortcut()
            }
        }
        .padding(20)
        .frame(minWidth: 380)
        .onAppear(perform: prepare)
        .closing(when: model.phase == .imported) { dismiss() }
        .fileImporter(isPresented: $importing, allowedContentTypes: [.plainText, .text, .data]) { result in
            guard case .success(let url) = result else { return }
            let scoped = url.startAccessingSecurityScopedResource()
            defer { if scoped { url.stopAccessingSecurityScopedResource() } }
            if let data = try? Data(contentsOf: url), data.count <= 1 << 16 {
                model.importResponse(String(decoding: data, as: UTF8.self))
            }
        }
    }

    /// The request, and a file of it to share.
    private func prepare() {
        model.prepareRequest()
        if code == nil { code = model.requestQRCode(scale: 4).flatMap(Image.init(pngData:)) }
        guard let file = model.requestFile else { return }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(file.name)
        if (try? file.contents.write(to: url, options: .atomic)) != nil { requestFile = url }
    }
}

extension OfflineActivationModel {
    /// The import's failure, for the view.
    var failure: LicenseFailure? {
        if case .failed(let failure) = phase { return failure }
        return nil
    }
}

extension View {
    /// Runs `action` when `condition` becomes true (onChange's one-argument form, deprecated from
    /// visionOS 1, and its two-argument form, from iOS 17 and macOS 14).
    @ViewBuilder func closing(when condition: Bool, _ action: @escaping () -> Void) -> some View {
        #if os(visionOS)
        onChange(of: condition) { _, now in if now { action() } }
        #else
        onChange(of: condition) { now in if now { action() } }
        #endif
    }
}

extension Image {
    /// An image from PNG bytes (the request's QR code).
    init?(pngData data: Data) {
        #if os(macOS)
        guard let image = NSImage(data: data) else { return nil }
        self.init(nsImage: image)
        #else
        guard let image = UIImage(data: data) else { return nil }
        self.init(uiImage: image)
        #endif
    }
}
#endif
