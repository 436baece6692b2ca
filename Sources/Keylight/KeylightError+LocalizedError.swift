import Foundation

/// Words an alert can show: `error.localizedDescription` is the description below, and
/// `recoverySuggestion` says what the user (or, for a configuration mistake, the developer) can do.
extension KeylightError: LocalizedError {
    public var errorDescription: String? {
        let text = Self.english[kind]
        guard let text else { return message }
        return SDKStrings.localized("\(kind.rawValue).description", english: text.description)
    }

    /// The detail behind the description: the server's or the SDK's own message.
    public var failureReason: String? { message }

    public var recoverySuggestion: String? {
        guard let english = Self.english[kind]?.recovery else { return nil }
        return SDKStrings.localized("\(kind.rawValue).recovery", english: english)
    }

    /// The English text, compiled in, so nothing depends on a resource bundle (the static
    /// `keylight` binary ships without one). Other languages come from the SDK's `.lproj` tables
    /// where its bundle exists (``SDKStrings``).
    static let english: [Kind: (description: String, recovery: String?)] = [
        .invalidKeyFormat: ("That is not a license key for this app.", "Check the key in your purchase email and enter it again."),
        .network: ("The license server could not be reached.", "Check your internet connection. The app keeps working with the license it has and tries again later."),
        .serverUnavailable: ("The license server is not answering right now.", "Try again in a few minutes."),
        .rateLimited: ("Too many license requests were made in a short time.", "Wait a minute, then try again."),
        .untrustedLease: ("The license server's answer could not be trusted.", "Make sure nothing on this network intercepts secure connections, then try again. If it persists, contact the developer."),
        .activationLimitReached: ("This license is already in use on its maximum number of devices.", "Free a device you no longer use, then activate this one."),
        .licenseRevoked: ("This license has been revoked.", "If you bought a new key, enter it. Otherwise contact the seller."),
        .licenseSuspended: ("This license is suspended.", "Contact the seller to restore it."),
        .licenseExpired: ("This license has expired.", "Renew it, or enter a new license key."),
        .instanceInactive: ("This device's activation was removed.", "Activate the license on this device again."),
        .notFound: ("The license server does not know this license key.", "Check the key in your purchase email. If it is right, contact the developer: the app may be set up for another product."),
        .unauthorized: ("The license server refused this app.", "Contact the developer: the app's SDK key does not match its product."),
        .invalidRequest: ("The license server could not read the request.", "Update the app. If it persists, contact the developer."),
        .noAppStorePurchase: ("No App Store purchase of this app was found on this device.", "Buy the app, or restore your purchases with the Apple Account you bought it with."),
        .notActivated: ("No license is active on this device.", nil),
        .offlineFile: ("That activation file cannot be used on this device.", "Make a new activation request on this device and use its answer."),
        .storageLocked: ("The license cannot be read until this device is unlocked.", "Unlock the device; the app reads the license again on its own."),
        .storage: ("The license could not be read or saved on this device.", "Restart the app. If it persists, contact the developer."),
        .configuration: ("The app's licensing is not set up correctly.", "Developer: the failure reason names the Info.plist entry or argument to fix."),
        .appTransportSecurity: (
            "App Transport Security blocked the connection to the license server.",
            "Developer: set KeylightServerURL to an https:// address (or, for a development server, add an App Transport Security exception for its domain)."
        ),
        .missingNetworkEntitlement: (
            "This app is not allowed to connect to the network.",
            "Developer: turn on Outgoing Connections (Client) under App Sandbox in Signing & Capabilities (the com.apple.security.network.client entitlement)."
        ),
        .signatureVerificationFailed: ("The license server's answer could not be verified.", "Make sure nothing on this network intercepts secure connections, then try again."),
    ]
}

/// Looks up the SDK's translations in its resource bundle when the app ships one, without
/// `Bundle.module`, whose accessor stops the process when the bundle is missing (the static
/// `keylight` binary has none). English, compiled in, is the fallback.
package enum SDKStrings {
    static let table = "Keylight"

    /// The SDK's resource bundle, if it was installed.
    static let bundle: Bundle? = findBundle(target: "Keylight", beside: BundleToken.self)

    /// A resource bundle of this package's `target` (SwiftPM names it `Keylight_<target>.bundle`,
    /// or `.resources` on Linux), beside the app or tool, or beside the bundle holding `anchor`'s
    /// code (a framework, or a test bundle whose `Bundle.main` is the test runner).
    package static func findBundle(target: String, beside anchor: AnyClass) -> Bundle? {
        let main = Bundle.main, own = Bundle(for: anchor)
        return findBundle(named: ["Keylight_\(target).bundle", "Keylight_\(target).resources"], in: [
            main.resourceURL, main.bundleURL, main.executableURL?.deletingLastPathComponent(),
            own.resourceURL, own.bundleURL, own.bundleURL.deletingLastPathComponent(),
        ])
    }

    static func findBundle(named names: [String], in folders: [URL?]) -> Bundle? {
        for folder in folders.compactMap({ $0 }) {
            for name in names {
                let url = folder.appendingPathComponent(name, isDirectory: true)
                if FileManager.default.fileExists(atPath: url.path), let bundle = Bundle(url: url) { return bundle }
            }
        }
        return nil
    }

    static func localized(_ key: String, english: String, bundle: Bundle? = SDKStrings.bundle) -> String {
        guard let bundle else { return english }
        return bundle.localizedString(forKey: key, value: english, table: table)
    }
}

/// A class of this module, for `Bundle(for:)`.
private final class BundleToken {}
