import Foundation

/// The secure store on Apple platforms: generic-password Keychain items, never synchronised
/// through iCloud and never restored to another device. (Not the data-protection keychain on
/// macOS: it needs a signed app with a keychain-access-group entitlement, which command-line tools
/// and unsigned development builds lack, and items kept by earlier releases are in the login keychain.)
///
/// Every Keychain call goes through ``KeychainServices``; the default is the real one
/// (``SystemKeychain``). A Keychain that cannot be read yet (`errSecInteractionNotAllowed`, a
/// launch before the first unlock) throws ``KeylightError/storageLocked``, which the license
/// manager takes as "ask again later", never as a verdict about the license.
public struct KeychainStore: SecureStore {
    public let service: String
    public let accessibility: KeychainAccessibility
    let keychain: any KeychainServices

    /// - Parameters:
    ///   - service: the items' service name (the SDK uses `dev.keylight.<tenant>.<product>`).
    ///   - accessibility: `.afterFirstUnlockThisDeviceOnly` by default (background refreshes must
    ///     read the license); device trust uses `.whenUnlockedThisDeviceOnly`.
    ///   - keychain: the Keychain calls (inject a fake to test).
    public init(service: String, accessibility: KeychainAccessibility = .afterFirstUnlockThisDeviceOnly, keychain: any KeychainServices = SystemKeychain()) {
        self.service = service
        self.accessibility = accessibility
        self.keychain = keychain
    }

    /// What names one item: its class, service and account, outside iCloud Keychain.
    func query(_ key: String) -> [String: any Sendable] {
        [
            KeychainAttribute.itemClass: KeychainAttribute.genericPassword,
            KeychainAttribute.service: service,
            KeychainAttribute.account: key,
            KeychainAttribute.synchronizable: false,
        ]
    }

    public func data(for key: String) throws -> Data? {
        var query = query(key)
        query[KeychainAttribute.returnData] = true
        query[KeychainAttribute.matchLimit] = KeychainAttribute.matchLimitOne
        let (status, result) = keychain.copyMatching(query)
        switch status {
        case KeychainStatus.success:
            guard let data = result as? Data else { throw KeylightError.storage("Keychain item \(key) holds no data") }
            return data
        case KeychainStatus.itemNotFound: return nil
        default: throw Self.error(status, "read")
        }
    }

    public func set(_ data: Data?, for key: String) throws {
        let base = query(key)
        guard let data else {
            let status = keychain.delete(base)
            guard status == KeychainStatus.success || status == KeychainStatus.itemNotFound else { throw Self.error(status, "delete") }
            return
        }
        let attributes: [String: any Sendable] = [
            KeychainAttribute.valueData: data, KeychainAttribute.accessible: accessibility.rawValue,
        ]
        // Add first (one call for a new item); an existing item is updated in place, which also
        // moves an item written under an older accessibility class to this one.
        var status = keychain.add(base.merging(attributes) { $1 })
        if status == KeychainStatus.duplicateItem {
            status = keychain.update(base, attributes)
        }
        guard status == KeychainStatus.success else { throw Self.error(status, "write") }
    }

    static func error(_ status: Int32, _ action: String) -> KeylightError {
        status == KeychainStatus.interactionNotAllowed ? .storageLocked : .storage("Keychain \(action) failed (\(status))")
    }
}

extension KeychainStore {
    /// Whether this platform has a Keychain (Apple platforms); elsewhere the SDK's default store
    /// is an ``EncryptedFileStore``.
    public static var isAvailable: Bool {
        #if canImport(Security)
        true
        #else
        false
        #endif
    }
}
