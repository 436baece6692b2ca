import Foundation
import Keylight

/// Where trust data belongs on this platform.
public enum TrustStorage {
    /// The Keychain, readable only while the device is unlocked and never migrated to another
    /// device (`WhenUnlockedThisDeviceOnly`), on Apple platforms; an encrypted file store under
    /// the user's data directory elsewhere.
    public static func platformDefault(service: String) -> any SecureStore {
        if KeychainStore.isAvailable {
            return KeychainStore(service: service, accessibility: .whenUnlockedThisDeviceOnly)
        }
        return EncryptedFileStore(directory: EncryptedFileStore.defaultDirectory(name: service))
    }
}
