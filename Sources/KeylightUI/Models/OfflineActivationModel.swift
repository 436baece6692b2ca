import Foundation
import Keylight
import KeylightQR

/// Activating a device that cannot reach the server: its request as a file and a QR code, taken
/// to a device that is online (the customer portal), and the response file imported here.
@MainActor
public final class OfflineActivationModel: KeylightUIModel {
    public enum Phase: Hashable, Sendable {
        case ready
        case imported
        case failed(LicenseFailure)
    }

    public let manager: LicenseManager
    public private(set) var phase: Phase = .ready { willSet { changing() } }
    /// The request (armored text), made once per window.
    public private(set) var requestText: String? { willSet { changing() } }
    /// Why no request could be made (the store could not be read).
    public private(set) var requestError: LicenseFailure? { willSet { changing() } }
    /// The key the response is for (the same field as the online activation).
    public var keyText = "" { willSet { changing() } }

    public init(manager: LicenseManager, strings: UIStrings = UIStrings()) {
        self.manager = manager
        super.init(strings: strings)
    }

    /// Makes the request (once); it holds this device's public key and machine hash, no secret.
    public func prepareRequest() {
        guard requestText == nil else { return }
        do {
            requestText = try manager.offlineActivationRequest()
            requestError = nil
        } catch {
            requestError = failure(error)
        }
    }

    /// The request as a file's bytes, and the name to save it under.
    public var requestFile: (name: String, contents: Data)? {
        requestText.map { (strings[.offlineRequestFileName], Data($0.utf8)) }
    }

    /// The request as a QR code (PNG), for a phone to carry; nil when it does not fit one.
    public func requestQRCode(scale: Int = 4) -> Data? {
        guard let requestText, let code = try? QRCode(text: requestText, errorCorrection: .low) else { return nil }
        return Data(QRRenderer(quietZone: 4, scale: max(1, scale)).png(code))
    }

    public var steps: [String] {
        [strings[.offlineStepSave], strings[.offlineStepPortal], strings[.offlineStepImport]]
    }

    /// Imports the response file's text, for the key typed in ``keyText``.
    public func importResponse(_ text: String) {
        do {
            try manager.activate(offlineResponse: text, key: KeyEntry(keyText, prefix: manager.configuration.keyPrefix).text)
            phase = .imported
        } catch {
            phase = .failed(failure(error))
        }
    }

    private func failure(_ error: any Error) -> LicenseFailure {
        LicenseFailure((error as? KeylightError) ?? .storage("\(error)"), strings: strings, renewURL: manager.upgradeURL,
                supportEmail: manager.configuration.branding?.supportEmail)
    }
}
