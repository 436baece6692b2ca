import Foundation
import KeylightCore

/// Each license's key, sealed under the master key and bound to the license, so it can be
/// mailed again; the key's hash stays the lookup.
enum LicenseKeySeal {
    static func context(licenseId: String) -> String { "keylight.license_key.\(licenseId)" }

    static func seal(_ key: LicenseKey, licenseId: String, with sealer: SecretSealer) throws -> String {
        try sealer.seal(Data(key.text.utf8), context: context(licenseId: licenseId))
    }

    static func open(_ sealed: String, licenseId: String, with sealer: SecretSealer) throws -> String {
        String(decoding: try sealer.open(sealed, context: context(licenseId: licenseId)), as: UTF8.self)
    }
}
