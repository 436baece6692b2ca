import Foundation

/// Where the SDK keeps secrets between launches: the license key, instance id, cached lease and
/// config, the trial clock and the last time the server was seen.
public protocol SecureStore: Sendable {
    /// The bytes stored under `key`, or nil.
    func data(for key: String) throws -> Data?
    /// Stores `data` under `key`; nil removes it.
    func set(_ data: Data?, for key: String) throws
}

/// A store in memory, for tests and previews. Nothing survives the process.
public final class InMemoryStore: SecureStore {
    private let items = Locked<[String: Data]>([:])

    public init() {}

    public func data(for key: String) throws -> Data? {
        items.withLock { $0[key] }
    }

    public func set(_ data: Data?, for key: String) throws {
        items.withLock { $0[key] = data }
    }
}
