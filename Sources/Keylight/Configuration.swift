import Crypto
import Foundation
import KeylightCore

/// How an app's `LicenseManager` talks to its server and what it trusts.
public struct Configuration: Sendable {
    /// The server's base URL, for example `https://licenses.example.com`.
    public var serverURL: URL
    public var tenantId: String
    public var productId: String
    /// The product's SDK key (identifies the app to the server; not a secret from the user).
    public var sdkKey: String
    /// The prefix of this product's license keys (2–8 characters); other keys are refused locally.
    public var keyPrefix: String
    /// Every signing key the app trusts, by kid (ship the next key before rotating to it).
    public var trustedKeys: [String: Curve25519.Signing.PublicKey]
    /// Trial length until a signed product config has been verified.
    public var trialDaysSeed: Int
    /// Whether the free tier applies until a signed product config has been verified (the hosted
    /// SDK's `freeTierEnabled:`). A verified config always decides once one has arrived.
    public var freeTierSeed: Bool
    /// A license not validated online for more than this many days resolves `.expired` until the
    /// server is reached again (the hosted SDK's `maxOfflineDays`); nil: only the lease's own
    /// expiry bounds offline use. Licenses activated from offline response files are exempt.
    public var maxOfflineDays: Int?
    /// The app's name, store link and colours, for the app's own license screens.
    public var branding: BrandingConfig?
    /// Which kind of store ``store`` is, when the configuration chose it (nil: a store of the app's own).
    public var storage: StorageBackend?
    /// The app's version, sent as `app_version` (trimmed to 64 bytes); defaults to the main
    /// bundle's `CFBundleShortVersionString`.
    public var appVersion: String?
    /// Called on the main actor when a response's signature does not verify while
    /// ``verificationMode`` is `.informational` (seed 004): the response is still used, and the
    /// app decides what to report. Under `.enforced` such responses are refused instead.
    public var onVerificationFailure: (@MainActor @Sendable (KeylightError) -> Void)?
    /// The name this device registers under (shown to the customer and the developer).
    public var instanceName: String
    /// Signed responses: `.informational` by default (verified and reported, nothing enforced).
    public var verificationMode: VerificationMode
    public var refreshPolicy: RefreshPolicy
    /// When this build was released. A license whose updates ended before it (an "updates until"
    /// license, whose date is signed into its lease) runs this build in the `.limited` state; earlier
    /// builds keep working for good. Defaults to the bundle's `KeylightReleaseDate` (see
    /// ``bundleReleaseDate(_:)``); nil applies no bound. Set it at build time, not from the clock.
    public var appReleaseDate: Date?
    /// What the `.limited` state grants (a lapsed license with fallback access, a build newer than
    /// the license's updates, a floating license without a seat): none by default.
    public var fallbackEntitlements: [String]
    public var clock: any WallClock
    public var store: any SecureStore
    public var transport: any Transport
    /// The app group whose shared container keeps the license files (``StorageLocation``), if any.
    public var appGroup: String?
    /// Whether activate and validate carry the app's and SDK's version and the platform (protocol
    /// 6.8's telemetry, which the seller's dashboard charts). Off: none of it is sent.
    public var sendsTelemetry: Bool = Defaults.sendsTelemetry
    /// Whether an install without a license sends the daily keyless beacon (which lets the seller
    /// count trials); off, it only fetches the signed product config.
    public var sendsKeylessBeacon: Bool = Defaults.sendsKeylessBeacon

    public init(
        serverURL: URL,
        tenantId: String,
        productId: String,
        sdkKey: String,
        keyPrefix: String,
        trustedKeys: [String: Curve25519.Signing.PublicKey],
        trialDaysSeed: Int = Defaults.trialDays,
        appVersion: String? = Bundle.main.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String,
        onVerificationFailure: (@MainActor @Sendable (KeylightError) -> Void)? = nil,
        instanceName: String = DeviceName.current,
        verificationMode: VerificationMode = Defaults.verificationMode,
        refreshPolicy: RefreshPolicy = RefreshPolicy(),
        appReleaseDate: Date? = Configuration.bundleReleaseDate(),
        fallbackEntitlements: [String] = [],
        clock: any WallClock = SystemWallClock(),
        store: (any SecureStore)? = nil,
        transport: (any Transport)? = nil,
        freeTierSeed: Bool = Defaults.freeTier,
        maxOfflineDays: Int? = Defaults.maxOfflineDays,
        branding: BrandingConfig? = nil,
        storage: StorageBackend? = nil
    ) {
        self.serverURL = serverURL
        self.tenantId = tenantId
        self.productId = productId
        self.sdkKey = sdkKey
        self.keyPrefix = keyPrefix
        self.trustedKeys = trustedKeys
        self.trialDaysSeed = trialDaysSeed
        self.appVersion = appVersion
        self.onVerificationFailure = onVerificationFailure
        self.instanceName = instanceName
        self.verificationMode = verificationMode
        self.refreshPolicy = refreshPolicy
        self.appReleaseDate = appReleaseDate
        self.fallbackEntitlements = fallbackEntitlements
        self.clock = clock
        self.freeTierSeed = freeTierSeed
        self.maxOfflineDays = maxOfflineDays
        self.branding = branding
        self.storage = store == nil ? (storage ?? Defaults.storage) : storage
        self.store = store ?? (storage ?? Defaults.storage).store(tenantId: tenantId, productId: productId)
        self.transport = transport ?? Self.defaultTransport(baseURL: serverURL)
    }

    /// The release date the bundle declares under `KeylightReleaseDate` in its Info.plist: a
    /// `Date`, or text as `2026-11-22` (UTC midnight) or ISO 8601 with a time. nil when absent or unreadable.
    public static func bundleReleaseDate(_ bundle: Bundle = .main) -> Date? {
        releaseDate(from: bundle.object(forInfoDictionaryKey: "KeylightReleaseDate"))
    }

    static func releaseDate(from value: Any?) -> Date? {
        if let date = value as? Date { return date }
        return (value as? String).flatMap(releaseDate(_:))
    }

    /// A release date written as `2026-11-22` (UTC midnight) or ISO 8601 with a time; nil otherwise.
    public static func releaseDate(_ text: String) -> Date? {
        let text = text.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, text.utf8.count <= 64 else { return nil }
        if let date = try? Date(text, strategy: .iso8601) { return date }
        return try? Date(text + "T00:00:00Z", strategy: .iso8601)
    }

    /// The Keychain on Apple platforms; an encrypted file store elsewhere.
    public static func defaultStore(tenantId: String, productId: String) -> any SecureStore {
        StorageBackend.platformDefault.store(tenantId: tenantId, productId: productId)
    }
}
