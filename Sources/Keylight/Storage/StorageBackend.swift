import Foundation

/// Where the SDK keeps the license between launches (the hosted SDK's `storage:` choice).
public enum StorageBackend: Hashable, Sendable {
    /// Sealed files in the app's Application Support folder (Apple platforms; see
    /// ``StorageLocation``) or the XDG data folder (Linux); no Keychain prompt on macOS. With
    /// `keychainMirror`, every write is also kept in the Keychain, and a file that is missing or
    /// unreadable is recovered from it (Apple platforms; elsewhere there is no Keychain to mirror to).
    case encryptedFile(keychainMirror: Bool = false)
    /// The Keychain (Apple platforms). Where there is none (Linux), sealed files instead.
    case keychain

    /// The Keychain where there is one, else sealed files: what ``Configuration`` uses when given no store.
    public static var platformDefault: StorageBackend {
        KeychainStore.isAvailable ? .keychain : .encryptedFile()
    }

    /// The store for one product of one tenant. `appGroup`: an app-group identifier whose shared
    /// container keeps the files, so an app and its extensions read one license (Apple platforms;
    /// the Keychain backend ignores it).
    public func store(tenantId: String, productId: String, appGroup: String? = nil) -> any SecureStore {
        let service = "dev.keylight.\(tenantId).\(productId)"
        let files = EncryptedFileStore.platformStore(name: "\(tenantId)-\(productId)", appGroup: appGroup)
        switch self {
        case .keychain:
            return KeychainStore.isAvailable ? KeychainStore(service: service) : files
        case .encryptedFile(let mirror):
            return mirror && KeychainStore.isAvailable ? MirroredStore(primary: files, mirror: KeychainStore(service: service)) : files
        }
    }
}
