import Foundation
#if canImport(Security)
import Security
#endif

/// The real Keychain: each call is the Security framework's, nothing more. Where there is no
/// Keychain (Linux) every call answers ``KeychainStatus/unimplemented``.
public struct SystemKeychain: KeychainServices {
    public init() {}

    public func add(_ attributes: [String: any Sendable]) -> Int32 {
        #if canImport(Security)
        SecItemAdd(attributes as [String: Any] as CFDictionary, nil)
        #else
        KeychainStatus.unimplemented
        #endif
    }

    public func copyMatching(_ query: [String: any Sendable]) -> (status: Int32, result: Any?) {
        #if canImport(Security)
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as [String: Any] as CFDictionary, &result)
        return (status, result)
        #else
        (KeychainStatus.unimplemented, nil)
        #endif
    }

    public func update(_ query: [String: any Sendable], _ attributes: [String: any Sendable]) -> Int32 {
        #if canImport(Security)
        SecItemUpdate(query as [String: Any] as CFDictionary, attributes as [String: Any] as CFDictionary)
        #else
        KeychainStatus.unimplemented
        #endif
    }

    public func delete(_ query: [String: any Sendable]) -> Int32 {
        #if canImport(Security)
        SecItemDelete(query as [String: Any] as CFDictionary)
        #else
        KeychainStatus.unimplemented
        #endif
    }
}
