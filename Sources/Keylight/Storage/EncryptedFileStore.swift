import Crypto
import Foundation
import KeylightCore

/// The secure store on Linux (and anywhere without a Keychain): one file per item, sealed with
/// ChaChaPoly under a 256-bit key kept in `store.key` (mode 0600) in the same directory. Item
/// names are hashed into file names, so neither names nor values appear in clear on disk.
public struct EncryptedFileStore: SecureStore {
    public let directory: URL

    public init(directory: URL) {
        self.directory = directory
    }

    /// `$XDG_DATA_HOME/keylight/<name>` (or `~/.local/share/keylight/<name>`).
    public static func defaultDirectory(name: String) -> URL {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_DATA_HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share")
        return base.appendingPathComponent("keylight").appendingPathComponent(name)
    }

    public func data(for key: String) throws -> Data? {
        let url = fileURL(for: key)
        guard let sealed = FileManager.default.contents(atPath: url.path) else { return nil }
        guard let storeKey = try existingKey() else { throw KeylightError.storage("\(directory.path): store key is missing") }
        do {
            return try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: sealed), using: storeKey, authenticating: Data(key.utf8))
        } catch {
            throw KeylightError.storage("\(url.lastPathComponent): cannot be decrypted (tampered, or the store key changed)")
        }
    }

    public func set(_ data: Data?, for key: String) throws {
        let url = fileURL(for: key)
        guard let data else {
            try? FileManager.default.removeItem(at: url)
            return
        }
        let storeKey = try existingKey() ?? createKey()
        do {
            let sealed = try ChaChaPoly.seal(data, using: storeKey, authenticating: Data(key.utf8)).combined
            try SecretFile.write(sealed, to: url.path, overwrite: true)
        } catch {
            throw KeylightError.storage("\(url.path): \(error)")
        }
    }

    private var keyURL: URL { directory.appendingPathComponent("store.key") }

    private func fileURL(for key: String) -> URL {
        directory.appendingPathComponent(Hex.encode(SHA256.hash(data: Data(key.utf8))).prefix(32) + ".sealed")
    }

    private func existingKey() throws -> SymmetricKey? {
        guard let raw = FileManager.default.contents(atPath: keyURL.path) else { return nil }
        guard raw.count == 32 else { throw KeylightError.storage("\(keyURL.path): not a 32-byte key") }
        return SymmetricKey(data: raw)
    }

    private func createKey() throws -> SymmetricKey {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let key = SymmetricKey(size: .bits256)
            try SecretFile.write(key.withUnsafeBytes { Data($0) }, to: keyURL.path)
            return key
        } catch let error as SecretFileError where error == .alreadyExists(keyURL.path) {
            // Another process created it first: use theirs.
            guard let key = try existingKey() else { throw KeylightError.storage("\(keyURL.path): unreadable") }
            return key
        } catch {
            throw KeylightError.storage("\(directory.path): \(error)")
        }
    }
}
