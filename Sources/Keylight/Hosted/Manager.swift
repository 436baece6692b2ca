import Crypto
import Foundation
import KeylightCore

// `Keylight.manager(...)`: module-level functions, so they read as the documentation writes them
// (a type named `Keylight` would shadow the module's name).

/// The app's license manager for `configuration` (the documented entry point; the same as
/// `LicenseManager(configuration:)`).
@MainActor
public func manager(_ configuration: KeylightConfiguration) -> LicenseManager {
    LicenseManager(configuration: configuration)
}

/// The app's license manager, with the hosted Keylight SDK's arguments, so code written for it
/// compiles unchanged:
///
/// ```swift
/// static let manager = try! Keylight.manager(
///     sdkKey: "sdk_live_…", tenantId: "acme", productId: "widget", keyPrefix: "ACME",
///     trustedPublicKeyBase64: "…", trialDurationDays: 14)
/// ```
///
/// The hosted SDK talks to the hosted service; this one to your server, named by `serverURL` or,
/// when that is nil, by `KeylightServerURL` in the app's Info.plist (``Configuration/bundleServerURL(_:environment:)``).
///
/// - Parameters:
///   - sdkKey: the product's SDK key, as the dashboard showed it.
///   - tenantId: the tenant's id on your server.
///   - productId: the product's id.
///   - keyPrefix: the prefix of the product's license keys (other keys are refused locally).
///   - branding: the app's name, store link and colours, for its own license screens.
///   - serverURL: your server; nil reads `KeylightServerURL` from the app's Info.plist.
///   - trustedPublicKeyBase64: the tenant's Ed25519 public key (32 bytes, base64), as the dashboard lists it.
///   - kid: the key's id; leave it out, and it is derived from the key exactly as the server
///     derives it (`k` and 10 hex characters). Give it only for a key the server names otherwise.
///   - trialDurationDays: the trial's length until the server's signed config says otherwise.
///   - freeTierEnabled: whether the free tier applies until the server's signed config says.
///   - maxOfflineDays: a license not validated online for more than this many days resolves
///     `.expired` until the server is reached again; nil turns the cap off.
///   - storage: where the license is kept.
/// - Throws: ``KeylightError/configuration(_:)`` for a key that is not an Ed25519 public key,
///   identifiers the server cannot have, or no server URL.
@MainActor
public func manager(
    sdkKey: String,
    tenantId: String,
    productId: String,
    keyPrefix: String,
    trustedPublicKeyBase64: String,
    trialDurationDays: Int,
    branding: BrandingConfig? = nil,
    kid: String? = nil,
    freeTierEnabled: Bool = Configuration.Defaults.freeTier,
    maxOfflineDays: Int? = Configuration.Defaults.maxOfflineDays,
    storage: StorageBackend = .encryptedFile(),
    serverURL: URL? = nil
) throws -> LicenseManager {
    guard let key = Configuration.publicKey(base64: trustedPublicKeyBase64) else {
        throw KeylightError.configuration("trustedPublicKeyBase64 is not an Ed25519 public key (32 bytes, base64)")
    }
    for (name, value) in [("tenantId", tenantId), ("productId", productId)] where !Configuration.isIdentifier(value) {
        throw KeylightError.configuration("\(name) must be 1-63 of a-z 0-9 _ -, starting with a letter or digit")
    }
    guard let server = serverURL ?? Configuration.bundleServerURL() else {
        throw KeylightError.configuration("no server URL: pass serverURL: or set KeylightServerURL in the app's Info.plist")
    }
    try Configuration.checkServerURL(server, name: serverURL == nil ? Configuration.InfoKey.serverURL : "serverURL")
    if let kid, !KeyID.isValid(kid) {
        throw KeylightError.configuration("kid must be 1-64 of A-Z a-z 0-9 . _ - (leave it out: it is derived from the key)")
    }
    let configuration = Configuration(
        serverURL: server, tenantId: tenantId, productId: productId, sdkKey: sdkKey, keyPrefix: keyPrefix,
        trustedKeys: [kid ?? KeyID.derived(from: key): key], trialDaysSeed: trialDurationDays, freeTierSeed: freeTierEnabled,
        maxOfflineDays: maxOfflineDays, branding: branding, storage: storage
    )
    return LicenseManager(configuration: configuration)
}

extension Configuration {
    /// A tenant or product id as the server accepts them: `[a-z0-9][a-z0-9_-]{0,62}`.
    static func isIdentifier(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (1...63).contains(bytes.count) else { return false }
        return bytes.enumerated().allSatisfy { index, byte in
            let alphanumeric = (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
            return alphanumeric || (index > 0 && (byte == 0x5F || byte == 0x2D))
        }
    }
}
