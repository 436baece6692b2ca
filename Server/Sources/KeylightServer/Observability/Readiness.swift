import Foundation
import NIOConcurrencyHelpers
import ServiceLifecycle

/// Whether this process should be sent traffic (`/readyz`): the database answers, the signing
/// keys are loaded, and no shutdown has begun. `/healthz` only says the process is alive.
final class Readiness: Sendable {
    let database: Database
    let keyRing: KeyRing
    /// How long the database may take to answer the check.
    let databaseTimeout: Duration
    private let draining = NIOLockedValueBox(false)

    init(database: Database, keyRing: KeyRing, databaseTimeout: Duration = .seconds(2)) {
        self.database = database
        self.keyRing = keyRing
        self.databaseTimeout = databaseTimeout
    }

    var isDraining: Bool { draining.withLockedValue { $0 } }

    /// From now on the process is not ready: graceful shutdown has begun.
    func startDraining() {
        draining.withLockedValue { $0 = true }
    }

    /// Nil when ready, else why not.
    func unreadiness() async -> String? {
        if isDraining { return "draining" }
        guard keyRing.isLoaded else { return "signing keys not loaded" }
        let timeout = databaseTimeout
        let answered = await withTaskGroup(of: Bool.self) { group in
            group.addTask { [database] in (try? await database.ping()) != nil }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        return answered ? nil : "database not answering"
    }
}

/// Turns readiness off the moment graceful shutdown begins (SIGTERM), before any other service
/// stops: listed last in the service group, it is the first one told.
struct DrainSignal: Service {
    let readiness: Readiness

    func run() async throws {
        try? await gracefulShutdown()
        readiness.startDraining()
    }
}
