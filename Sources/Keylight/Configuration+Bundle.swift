import Crypto
import Foundation
import KeylightCore

/// The one way in: the values an app needs, read from its Info.plist or given in code, with one
/// set of defaults (``Configuration/Defaults``).
extension Configuration {
    /// The defaults every way of making a configuration uses.
    public enum Defaults {
        /// Days a license may go without an online check before it resolves `.expired` (the hosted SDK's).
        public static let maxOfflineDays: Int? = 15
        /// The Keychain on Apple platforms, sealed files elsewhere.
        public static var storage: StorageBackend { .platformDefault }
        public static let verificationMode = VerificationMode.informational
        public static let trialDays = 0
        public static let freeTier = false
        public static let sendsTelemetry = true
        public static let sendsKeylessBeacon = true
    }

    /// The Info.plist keys the SDK reads.
    public enum InfoKey {
        public static let serverURL = "KeylightServerURL"
        public static let tenant = "KeylightTenant"
        public static let product = "KeylightProduct"
        public static let sdkKey = "KeylightSDKKey"
        /// An array of base64 Ed25519 public keys: the tenant's current key and its prepared next one.
        public static let publicKeys = "KeylightPublicKeys"
        public static let keyPrefix = "KeylightKeyPrefix"
        public static let trialDays = "KeylightTrialDays"
        public static let freeTier = "KeylightFreeTier"
        public static let appGroup = "KeylightAppGroup"
        public static let telemetry = "KeylightTelemetry"
        public static let keylessBeacon = "KeylightKeylessBeacon"
        public static let releaseDate = "KeylightReleaseDate"
    }

    /// The configuration the app's Info.plist describes (see ``InfoKey``).
    ///
    /// - Throws: ``KeylightError`` of kind ``KeylightError/Kind/configuration``, naming the entry
    ///   that is missing or wrong.
    public init(bundle: Bundle = .main) throws {
        try self.init(infoDictionary: bundle.infoDictionary ?? [:])
    }

    /// The configuration an Info.plist dictionary describes (``init(bundle:)`` reads the app's).
    public init(infoDictionary info: [String: Any]) throws {
        func text(_ key: String) throws -> String {
            guard let value = info[key] else { throw KeylightError.configuration("\(key) is missing from the app's Info.plist") }
            guard let text = value as? String, !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                throw KeylightError.configuration("\(key) in the app's Info.plist must be a non-empty string")
            }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        func flag(_ key: String, _ fallback: Bool) throws -> Bool {
            guard let value = info[key] else { return fallback }
            if let flag = value as? Bool { return flag }
            if let text = value as? String, let flag = ["yes": true, "true": true, "1": true, "no": false, "false": false, "0": false][text.lowercased()] {
                return flag
            }
            throw KeylightError.configuration("\(key) in the app's Info.plist must be a Boolean")
        }
        let serverText = try text(InfoKey.serverURL)
        guard let server = URL(string: serverText) else { throw KeylightError.configuration("\(InfoKey.serverURL) is not a URL: \(serverText)") }
        guard let keys = info[InfoKey.publicKeys] else {
            throw KeylightError.configuration("\(InfoKey.publicKeys) is missing from the app's Info.plist (an array of the base64 public keys the dashboard lists)")
        }
        let publicKeys: [String]
        if let array = keys as? [Any] {
            publicKeys = try array.enumerated().map { index, element in
                guard let key = element as? String else { throw KeylightError.configuration("\(InfoKey.publicKeys)[\(index)] must be a string") }
                return key
            }
        } else if let single = keys as? String {
            publicKeys = [single]
        } else {
            throw KeylightError.configuration("\(InfoKey.publicKeys) must be an array of base64 strings")
        }
        var trialDays = Defaults.trialDays
        if let value = info[InfoKey.trialDays] {
            guard let days = (value as? Int) ?? (value as? String).flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }), (0...3_650).contains(days) else {
                throw KeylightError.configuration("\(InfoKey.trialDays) must be a whole number of days from 0 to 3650")
            }
            trialDays = days
        }
        let prefix = try info[InfoKey.keyPrefix] == nil ? nil : text(InfoKey.keyPrefix)
        let group = try info[InfoKey.appGroup] == nil ? nil : text(InfoKey.appGroup)
        try self.init(
            serverURL: server, tenant: text(InfoKey.tenant), product: text(InfoKey.product), sdkKey: text(InfoKey.sdkKey),
            publicKeys: publicKeys, keyPrefix: prefix, trialDays: trialDays, freeTier: flag(InfoKey.freeTier, Defaults.freeTier),
            appGroup: group, sendsTelemetry: flag(InfoKey.telemetry, Defaults.sendsTelemetry),
            sendsKeylessBeacon: flag(InfoKey.keylessBeacon, Defaults.sendsKeylessBeacon),
            names: Names.infoPlist
        )
        appVersion = (info["CFBundleShortVersionString"] as? String) ?? appVersion
        appReleaseDate = Self.releaseDate(from: info[InfoKey.releaseDate])
    }

    /// The same values in code. `publicKeys`: the base64 Ed25519 public keys the dashboard lists
    /// (the current one and the prepared next one); each key's id is derived from it as the server
    /// derives it. `keyPrefix`: nil accepts keys of any prefix (the server still decides).
    ///
    /// - Throws: ``KeylightError`` of kind ``KeylightError/Kind/configuration`` naming the bad value.
    public init(
        serverURL: URL, tenant: String, product: String, sdkKey: String, publicKeys: [String], keyPrefix: String? = nil,
        trialDays: Int = Defaults.trialDays, freeTier: Bool = Defaults.freeTier, appGroup: String? = nil,
        sendsTelemetry: Bool = Defaults.sendsTelemetry, sendsKeylessBeacon: Bool = Defaults.sendsKeylessBeacon
    ) throws {
        try self.init(
            serverURL: serverURL, tenant: tenant, product: product, sdkKey: sdkKey, publicKeys: publicKeys, keyPrefix: keyPrefix,
            trialDays: trialDays, freeTier: freeTier, appGroup: appGroup, sendsTelemetry: sendsTelemetry,
            sendsKeylessBeacon: sendsKeylessBeacon, names: Names.code
        )
    }

    /// What a mistake is called: the Info.plist key, or the argument's label.
    private struct Names {
        var serverURL, tenant, product, sdkKey, publicKeys, keyPrefix: String
        static let infoPlist = Names(serverURL: InfoKey.serverURL, tenant: InfoKey.tenant, product: InfoKey.product, sdkKey: InfoKey.sdkKey,
                                     publicKeys: InfoKey.publicKeys, keyPrefix: InfoKey.keyPrefix)
        static let code = Names(serverURL: "serverURL", tenant: "tenant", product: "product", sdkKey: "sdkKey", publicKeys: "publicKeys", keyPrefix: "keyPrefix")
    }

    private init(
        serverURL: URL, tenant: String, product: String, sdkKey: String, publicKeys: [String], keyPrefix: String?,
        trialDays: Int, freeTier: Bool, appGroup: String?, sendsTelemetry: Bool, sendsKeylessBeacon: Bool, names: Names
    ) throws {
        try Self.checkServerURL(serverURL, name: names.serverURL)
        for (name, value) in [(names.tenant, tenant), (names.product, product)] where !Self.isIdentifier(value) {
            throw KeylightError.configuration("\(name) \"\(value)\" is not a tenant or product id (1-63 of a-z 0-9 _ -, starting with a letter or digit)")
        }
        guard !sdkKey.isEmpty, sdkKey.utf8.count <= 256, !sdkKey.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw KeylightError.configuration("\(names.sdkKey) must be the product's SDK key as the dashboard showed it")
        }
        if let keyPrefix, !(2...8).contains(keyPrefix.count) || !keyPrefix.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) {
            throw KeylightError.configuration("\(names.keyPrefix) \"\(keyPrefix)\" must be 2-8 of A-Z 0-9, as the product's key prefix")
        }
        guard !publicKeys.isEmpty else { throw KeylightError.configuration("\(names.publicKeys) is empty: list the public keys the dashboard shows") }
        var trusted: [String: Curve25519.Signing.PublicKey] = [:]
        for (index, text) in publicKeys.enumerated() {
            guard let key = Self.publicKey(base64: text) else {
                throw KeylightError.configuration("\(names.publicKeys)[\(index)] is not a base64 Ed25519 public key (32 bytes)")
            }
            trusted[KeyID.derived(from: key)] = key
        }
        guard (0...3_650).contains(trialDays) else { throw KeylightError.configuration("trialDays must be from 0 to 3650") }
        // An app group shares the license through its container's files: Keychain items would need
        // a keychain access group as well, which the Info.plist cannot grant.
        let storage = appGroup == nil ? Defaults.storage : .encryptedFile()
        self.init(
            serverURL: serverURL, tenantId: tenant, productId: product, sdkKey: sdkKey, keyPrefix: keyPrefix ?? "",
            trustedKeys: trusted, trialDaysSeed: trialDays,
            store: storage.store(tenantId: tenant, productId: product, appGroup: appGroup),
            freeTierSeed: freeTier, storage: storage
        )
        self.appGroup = appGroup
        self.sendsTelemetry = sendsTelemetry
        self.sendsKeylessBeacon = sendsKeylessBeacon
    }

    /// A 32-byte Ed25519 public key in base64 (standard or URL-safe, padded or not), or nil.
    static func publicKey(base64 text: String) -> Curve25519.Signing.PublicKey? {
        var normalized = text.trimmingCharacters(in: .whitespacesAndNewlines)
            .replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard normalized.utf8.count <= 64 else { return nil }
        while normalized.utf8.count % 4 != 0 { normalized += "=" }
        guard let raw = Data(base64Encoded: normalized), raw.count == 32 else { return nil }
        return try? Curve25519.Signing.PublicKey(rawRepresentation: raw)
    }

    /// https, or http to this machine (a development server): App Transport Security refuses
    /// plain http elsewhere on Apple platforms, and a license check must not travel in clear.
    static func checkServerURL(_ url: URL, name: String) throws {
        guard let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            throw KeylightError.configuration("\(name) must be an https URL such as https://licenses.example.com, not \(url.absoluteString)")
        }
        if scheme == "https" { return }
        let loopback = host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
        guard scheme == "http", loopback else {
            throw KeylightError.configuration("\(name) must use https (http is accepted only for a server on this machine): \(url.absoluteString)")
        }
    }
}

extension LicenseManager {
    /// The app's license manager, configured from its Info.plist (see ``Configuration/init(bundle:)``).
    ///
    /// - Throws: ``KeylightError`` of kind ``KeylightError/Kind/configuration`` naming the entry
    ///   that is missing or wrong.
    public convenience init(bundle: Bundle = .main) throws {
        self.init(configuration: try Configuration(bundle: bundle))
    }
}
