import Foundation

/// A store that writes to two stores and reads the first, falling back to the second when the
/// first has nothing or cannot be read (`.encryptedFile(keychainMirror: true)`): a deleted or
/// damaged file does not lose the license.
public struct MirroredStore: SecureStore {
    public let primary: any SecureStore
    public let mirror: any SecureStore

    public init(primary: any SecureStore, mirror: any SecureStore) {
        self.primary = primary
        self.mirror = mirror
    }

    public func data(for key: String) throws -> Data? {
        let primaryData: Data?
        do {
            primaryData = try primary.data(for: key)
        } catch {
            // The primary cannot say: the mirror's copy, or the primary's error when there is none.
            if let copy = try? mirror.data(for: key) { return copy }
            throw error
        }
        if let primaryData { return primaryData }
        return try mirror.data(for: key)
    }

    public func set(_ data: Data?, for key: String) throws {
        try primary.set(data, for: key)
        try mirror.set(data, for: key)
    }
}
