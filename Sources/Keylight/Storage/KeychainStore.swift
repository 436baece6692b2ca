#if canImport(Security)
import Foundation
import Security

/// The secure store on Apple platforms: generic-password Keychain items, readable after the first
/// unlock, never synchronised through iCloud and never restored to another device.
public struct KeychainStore: SecureStore {
    public let service: String
    /// `kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly` by default (licenses must be readable by
    /// background refreshes); device trust uses `…WhenUnlockedThisDeviceOnly`.
    public let accessibility: CFString

    public init(service: String, accessibility: CFString = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly) {
        self.service = service
        self.accessibility = accessibility
    }

    private func query(_ key: String) -> [String: Any] {
        [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: key,
            kSecAttrSynchronizable as String: kCFBooleanFalse as Any,
        ]
    }

    public func data(for key: String) throws -> Data? {
        var query = query(key)
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        switch status {
        case errSecSuccess: return result as? Data
        case errSecItemNotFound: return nil
        default: throw KeylightError.storage("Keychain read failed (\(status))")
        }
    }

    public func set(_ data: Data?, for key: String) throws {
        let base = query(key)
        guard let data else {
            let status = SecItemDelete(base as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else { throw KeylightError.storage("Keychain delete failed (\(status))") }
            return
        }
        let attributes: [String: Any] = [kSecValueData as String: data, kSecAttrAccessible as String: accessibility]
        var status = SecItemUpdate(base as CFDictionary, attributes as CFDictionary)
        if status == errSecItemNotFound {
            status = SecItemAdd(base.merging(attributes) { $1 } as CFDictionary, nil)
        }
        guard status == errSecSuccess else { throw KeylightError.storage("Keychain write failed (\(status))") }
    }
}
#endif
