import Foundation

/// The four Keychain calls ``KeychainStore`` makes — `SecItemAdd`, `SecItemCopyMatching`,
/// `SecItemUpdate`, `SecItemDelete` — with their `OSStatus` results. ``SystemKeychain`` makes
/// them for real on Apple platforms; tests (on any platform) answer them with a fake, so the
/// store's handling of every status is compiled and run everywhere.
///
/// Queries and attributes are dictionaries keyed by the Security framework's own attribute
/// names (``KeychainAttribute``), so they pass to the framework unchanged.
public protocol KeychainServices: Sendable {
    /// `SecItemAdd(attributes, nil)`.
    func add(_ attributes: [String: any Sendable]) -> Int32
    /// `SecItemCopyMatching(query, &result)`: the status and the returned object, if any.
    func copyMatching(_ query: [String: any Sendable]) -> (status: Int32, result: Any?)
    /// `SecItemUpdate(query, attributesToUpdate)`.
    func update(_ query: [String: any Sendable], _ attributes: [String: any Sendable]) -> Int32
    /// `SecItemDelete(query)`.
    func delete(_ query: [String: any Sendable]) -> Int32
}

/// The `OSStatus` values the store tells apart.
public enum KeychainStatus {
    public static let success: Int32 = 0
    /// `errSecItemNotFound`.
    public static let itemNotFound: Int32 = -25300
    /// `errSecDuplicateItem`.
    public static let duplicateItem: Int32 = -25299
    /// `errSecInteractionNotAllowed`: the Keychain is not readable yet — typically a launch in the
    /// background before the device's first unlock since boot. Says nothing about the license.
    public static let interactionNotAllowed: Int32 = -25308
    /// `errSecUnimplemented`: what ``SystemKeychain`` answers where there is no Keychain.
    public static let unimplemented: Int32 = -4
}

/// The Security framework's attribute names and values, as the strings its `kSec…` constants
/// hold (a test on Apple platforms checks each against the constant).
public enum KeychainAttribute {
    public static let itemClass = "class"                // kSecClass
    public static let genericPassword = "genp"           // kSecClassGenericPassword
    public static let service = "svce"                   // kSecAttrService
    public static let account = "acct"                   // kSecAttrAccount
    public static let synchronizable = "sync"            // kSecAttrSynchronizable
    public static let accessible = "pdmn"                // kSecAttrAccessible
    public static let valueData = "v_Data"               // kSecValueData
    public static let returnData = "r_Data"              // kSecReturnData
    public static let matchLimit = "m_Limit"             // kSecMatchLimit
    public static let matchLimitOne = "m_LimitOne"       // kSecMatchLimitOne
}

/// When a Keychain item can be read. Only `…ThisDeviceOnly` classes: a license or device
/// identity never moves to another device through a backup or iCloud.
public enum KeychainAccessibility: String, Sendable, Hashable, CaseIterable {
    /// `kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`: readable by background work once the
    /// device has been unlocked after boot. The license store's default.
    case afterFirstUnlockThisDeviceOnly = "cku"
    /// `kSecAttrAccessibleWhenUnlockedThisDeviceOnly`: only while unlocked (device trust).
    case whenUnlockedThisDeviceOnly = "aku"
    /// `kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly`: only while unlocked, only with a passcode.
    case whenPasscodeSetThisDeviceOnly = "akpu"
}
