import Crypto
import Foundation

/// The configuration's name in the Keylight documentation and the hosted SDK.
public typealias KeylightConfiguration = Configuration

extension Configuration {
    /// Every signing key the app trusts, by kid: the documented name of ``trustedKeys``.
    public var trustedPublicKeys: [String: Curve25519.Signing.PublicKey] {
        get { trustedKeys }
        set { trustedKeys = newValue }
    }

    /// The server the bundle names under `KeylightServerURL` in its Info.plist, else the
    /// `KEYLIGHT_SERVER_URL` environment variable (command-line tools, tests); nil when neither does.
    public static func bundleServerURL(_ bundle: Bundle = .main, environment: [String: String] = ProcessInfo.processInfo.environment) -> URL? {
        let text = (bundle.object(forInfoDictionaryKey: "KeylightServerURL") as? String) ?? environment["KEYLIGHT_SERVER_URL"]
        guard let text, let url = URL(string: text.trimmingCharacters(in: .whitespaces)),
              let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http", url.host != nil else { return nil }
        return url
    }
}

extension KeylightError {
    /// The app's configuration cannot work (a trusted key that is not a key, no server URL, …).
    public static func configuration(_ reason: String) -> Self { Self(code: "CONFIGURATION", message: reason) }
}
