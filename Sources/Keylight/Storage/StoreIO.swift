import Foundation
import KeylightCore

/// The manager's reads and writes of its secure store. The manager runs them off the main actor
/// (a Keychain that asks the user, or a file on a device that is still locked, must never stall
/// the app's interface), except the synchronous offline-file calls, which write before they
/// return. Writes are numbered and made under one lock: one overtaken by a newer snapshot is
/// skipped, so the newest state wins whichever path wrote it.
final class StoreIO: Sendable {
    let store: any SecureStore
    /// Every read and write holds it: the store is used from one thread at a time, as it was when
    /// the main actor did it all (a first write creates the store's key; two at once must not).
    private let lastWritten = Locked(0)

    init(store: any SecureStore) {
        self.store = store
    }

    func load() throws -> (state: PersistedState, isCompact: Bool) {
        try lastWritten.withLock { _ in try PersistedState.loadReportingLayout(from: store) }
    }

    func save(_ state: PersistedState, sequence: Int) throws {
        try lastWritten.withLock { last in
            guard sequence > last else { return }
            try state.save(to: store)
            last = sequence
        }
    }

    func machineHash(productKey: String) throws -> String {
        try lastWritten.withLock { _ in try MachineIdentity.hash(productKey: productKey, store: store) }
    }

    /// Runs `work` on the global concurrent executor, not the caller's (the main actor).
    static func offMain<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await Task.detached(priority: .userInitiated, operation: work).value
    }
}
