import Foundation
import Keylight
#if canImport(Security)
import Security
#endif

/// Where trust data belongs on this platform.
public enum TrustStorage {
    /// The Keychain, readable only while the device is unlocked and never migrated to another
    /// device (`WhenUnlockedThisDeviceOnly`), on Apple platforms; an encrypted file store under
    /// the user's data directory elsewhere.
    public static func platformDefault(service: String) -> any SecureStore {
        #if canImport(Security)
        KeychainStore(service: service, accessibility: kSecAttrAccessibleWhenUnlockedThisDeviceOnly)
        #else
        EncryptedFileStore(directory: EncryptedFileStore.defaultDirectory(name: service))
        #endif
    }
}
