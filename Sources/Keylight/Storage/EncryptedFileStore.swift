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

    public init(directory: URL) {
        self.directory = directory
        let path = directory.path
        self.directoryPath = path.hasSuffix("/") ? path : path + "/"
        self.keyPath = directoryPath + "store.key"
    }

    /// `$XDG_DATA_HOME/keylight/<name>` (or `~/.local/share/keylight/<name>`).
    public static func defaultDirectory(name: String) -> URL {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_DATA_HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share")
        return base.appendingPathComponent("keylight").appendingPathComponent(name)
    }

    public func data(for key: String) throws -> Data? {
        let path = filePath(for: key)
        let sealed: Data
        do {
            guard let read = try SecretFile.read(path, limit: Self.itemLimit) else { return nil }
            sealed = read
        } catch {
            throw KeylightError.storage("\(error)")
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
            throw KeylightError.storage("\(error)")
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
}
