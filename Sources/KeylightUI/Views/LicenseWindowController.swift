#if canImport(AppKit) && os(macOS)
import AppKit
import Keylight
import SwiftUI

/// The activation window for AppKit apps: ``LicensePromptView`` in a window of its own.
///
/// ```swift
/// let licenseWindow = LicenseWindowController(license: license)
/// licenseWindow.showActivation()
/// ```
@MainActor
public final class LicenseWindowController: NSWindowController {
    public init(license: LicenseManager, strings: UIStrings = UIStrings()) {
        // The view's Close closes this window (SwiftUI's dismiss does nothing outside a presentation).
        let hosting = NSHostingController(rootView: AnyView(EmptyView()))
        let window = NSWindow(contentViewController: hosting)
        window.title = strings.format(.activateTitle, license.configuration.branding?.appName ?? "")
        window.styleMask = [.titled, .closable]
        window.isReleasedWhenClosed = false
        super.init(window: window)
        hosting.rootView = AnyView(LicensePromptView(license: license, strings: strings, onClose: { [weak self] in self?.close() }))
    }

    @available(*, unavailable)
    required init?(coder: NSCoder) {
        fatalError("LicenseWindowController is made in code")
    }

    /// Shows the window in front, centred.
    public func showActivation() {
        window?.center()
        showWindow(nil)
        window?.makeKeyAndOrderFront(nil)
        if #available(macOS 14, *) {
            NSApp.activate()
        } else {
            NSApp.activate(ignoringOtherApps: true)
        }
    }
}
#endif
