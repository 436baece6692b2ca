import Foundation
import KeylightCore

/// The manager's reads and writes of its secure store, off the main actor: a Keychain that asks
/// the user, or a file on a device that is still locked, must never stall the app's interface.
/// Writes are numbered; one overtaken by a newer snapshot is skipped, so the newest state wins.
actor StoreIO {
    let store: any SecureStore
    private var lastWritten = 0

    init(store: any SecureStore) {
        self.store = store
    }

    func load() throws -> (state: PersistedState, isCompact: Bool) {
        try PersistedState.loadReportingLayout(from: store)
    }

    func save(_ state: PersistedState, sequence: Int) throws {
        guard sequence > lastWritten else { return }
        try state.save(to: store)
        lastWritten = sequence
    }

    func machineHash(productKey: String) throws -> String {
        try MachineIdentity.hash(productKey: productKey, store: store)
    }
}
