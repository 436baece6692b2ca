/// An error the SDK surfaces. `code` is stable; server errors carry the server's code.
public struct KeylightError: Error, Hashable, Sendable, CustomStringConvertible {
    public let code: String
    public let message: String
    /// With `ACTIVATION_LIMIT_REACHED`: the license's slots and the devices holding them, so the
    /// app can offer to free one (``LicenseManager/deactivate(device:)``) and activate again.
    public internal(set) var seats: Seats?

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    /// The text is not a license key of this product's format.
    public static let invalidKeyFormat = Self(code: "INVALID_KEY_FORMAT", message: "That is not a license key for this app.")
    /// The server could not be reached, or answered 5xx/429; nothing changed.
    public static func transient(_ reason: String) -> Self { Self(code: "TRANSIENT", message: reason) }
    /// The server answered with a lease this app cannot trust (unknown kid or bad signature).
    public static let untrustedLease = Self(code: "UNTRUSTED_LEASE", message: "The server's lease is not signed by a key this app trusts.")
    /// The server refused the request; `code` is the server's (for example `ACTIVATION_LIMIT_REACHED`).
    public static func server(code: String, message: String) -> Self { Self(code: code, message: message) }
    /// No verified App Store transaction of this app was found to exchange.
    public static let noAppStorePurchase = Self(code: "NO_APPSTORE_PURCHASE", message: "No App Store purchase of this app was found on this device.")
    /// There is no license to deactivate.
    public static let notActivated = Self(code: "NOT_ACTIVATED", message: "No license is active on this device.")
    /// An offline activation response or deactivation proof that cannot be used here; the message says why.
    public static func offlineFile(_ reason: String) -> Self { Self(code: "OFFLINE_FILE", message: reason) }
    /// The secure store cannot be read yet (the Keychain before the device's first unlock since
    /// boot). Not a verdict: the manager keeps what it knows and reads the store again later.
    public static let storageLocked = Self(code: "STORAGE_LOCKED", message: "The secure store is locked until the device is unlocked.")
    /// The secure store could not be read or written.
    public static func storage(_ reason: String) -> Self { Self(code: "STORAGE", message: reason) }
}
