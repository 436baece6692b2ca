import Crypto
import Foundation
import KeylightCore

/// The secure store on Linux (and anywhere without a Keychain): one file per item, sealed with
/// ChaChaPoly under a 256-bit key kept in `store.key` (mode 0600) in the same directory. Item
/// names are hashed into file names, so neither names nor values appear in clear on disk.
public struct EncryptedFileStore: SecureStore {
    public let directory: URL
    /// Paths as strings, built once: Foundation's URL appending costs more than the rest of a
    /// read on Linux, and a launch reads twice (the key, the item).
    private let directoryPath: String
    private let keyPath: String
    /// Items are small (the license state is about 2 KB): anything much larger is not ours.
    static let itemLimit = 1 << 20

    /// Where SDK 1.x kept this store, when it differs (macOS): moved here once, before the first read.
    public let legacyDirectory: URL?
    /// The system's error numbers that mean "not readable yet" rather than "damaged": on iOS and
    /// its kin a file protected until the first unlock answers `EPERM` before it.
    let lockedErrors: Set<Int32>
    /// Whether the move from ``legacyDirectory`` has been settled (done, or nothing to move): it is
    /// looked for once, not on every read and write. Shared by copies of this store.
    private let legacySettled = Locked(false)

    public init(directory: URL, legacyDirectory: URL? = nil) {
        self.init(directory: directory, legacyDirectory: legacyDirectory, lockedErrors: Self.platformLockedErrors)
    }

    init(directory: URL, legacyDirectory: URL?, lockedErrors: Set<Int32>) {
        self.directory = directory
        let path = directory.path
        self.directoryPath = path.hasSuffix("/") ? path : path + "/"
        self.keyPath = directoryPath + "store.key"
        self.legacyDirectory = legacyDirectory.flatMap { $0.standardizedFileURL == directory.standardizedFileURL ? nil : $0 }
        self.lockedErrors = lockedErrors
    }

    /// Where this platform keeps the store named `name` (see ``StorageLocation``).
    public static func defaultDirectory(name: String) -> URL {
        StorageLocation.current().directory(name: name)
    }

    /// The store named `name` where this platform keeps it, moving one SDK 1.x left elsewhere.
    public static func platformStore(name: String, appGroup: String? = nil) -> EncryptedFileStore {
        let location = StorageLocation.current(appGroup: appGroup)
        return EncryptedFileStore(directory: location.directory(name: name), legacyDirectory: location.legacyDirectory(name: name))
    }

    static var platformLockedErrors: Set<Int32> {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        [EPERM, EACCES]
        #else
        []
        #endif
    }

    public func data(for key: String) throws -> Data? {
        try moveLegacyStoreIfNeeded()
        let path = filePath(for: key)
        let sealed: Data
        do {
            guard let read = try SecretFile.read(path, limit: Self.itemLimit) else { return nil }
            sealed = read
        } catch {
            throw readError(error)
        }
        guard let storeKey = try existingKey() else { throw KeylightError.storage("\(directory.path): store key is missing") }
        do {
            return try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: sealed), using: storeKey, authenticating: Data(key.utf8))
        } catch {
            throw KeylightError.storage("\(path.split(separator: "/").last ?? ""): cannot be decrypted (tampered, or the store key changed)")
        }
    }

    public func set(_ data: Data?, for key: String) throws {
        let path = filePath(for: key)
        guard let data else {
            try? FileManager.default.removeItem(atPath: path)
            return
        }
        try moveLegacyStoreIfNeeded()
        let storeKey = try existingKey() ?? createKey()
        do {
            let sealed = try ChaChaPoly.seal(data, using: storeKey, authenticating: Data(key.utf8)).combined
            try SecretFile.write(sealed, to: path, overwrite: true)
        } catch {
            throw KeylightError.storage("\(path): \(error)")
        }
    }


    private func filePath(for key: String) -> String {
        directoryPath + Hex.encode(SHA256.hash(data: Data(key.utf8))).prefix(32) + ".sealed"
    }

    private func existingKey() throws -> SymmetricKey? {
        let raw: Data
        do {
            guard let read = try SecretFile.read(keyPath, limit: 64) else { return nil }
            raw = read
        } catch {
            throw readError(error)
        }
        guard raw.count == 32 else { throw KeylightError.storage("\(keyPath): not a 32-byte key") }
        return SymmetricKey(data: raw)
    }

    private func createKey() throws -> SymmetricKey {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let key = SymmetricKey(size: .bits256)
            try SecretFile.write(key.withUnsafeBytes { Data($0) }, to: keyPath)
            return key
        } catch let error as SecretFileError where error == .alreadyExists(keyPath) {
            // Another process created it first: use theirs.
            guard let key = try existingKey() else { throw KeylightError.storage("\(keyPath): unreadable") }
            return key
        } catch {
            throw KeylightError.storage("\(directory.path): \(error)")
        }
    }

    /// A read the system refused until the device is unlocked is ``KeylightError/storageLocked``
    /// (the manager waits and reads again, never overwriting the license); anything else is damage.
    private func readError(_ error: SecretFileError) -> KeylightError {
        if let code = error.errno, lockedErrors.contains(code) { return .storageLocked }
        return .storage("\(error)")
    }

    /// Moves the folder SDK 1.x wrote to this store's place, once: when this store has no key yet
    /// and the old folder has one. A rename when both are on one volume, so an app and its helper
    /// racing here cannot both move it; the one that loses finds the store in place.
    func moveLegacyStoreIfNeeded() throws {
        guard let legacyDirectory, !legacySettled.withLock({ $0 }) else { return }
        let manager = FileManager.default
        let legacyKey = legacyDirectory.appendingPathComponent("store.key").path
        do {
            if !manager.fileExists(atPath: keyPath), manager.fileExists(atPath: legacyKey) {
                try manager.createDirectory(at: directory.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                try manager.moveItem(at: legacyDirectory, to: directory)
            }
            legacySettled.withLock { $0 = true }
        } catch {
            // Lost a race to another process, which moved it: the store is in place now.
            if manager.fileExists(atPath: keyPath) {
                legacySettled.withLock { $0 = true }
                return
            }
            throw KeylightError.storage("could not move the license kept by an earlier version from \(legacyDirectory.path): \(error)")
        }
    }
}
