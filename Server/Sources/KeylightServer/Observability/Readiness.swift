import Foundation
import NIOConcurrencyHelpers
import ServiceLifecycle

/// Whether this process should be sent traffic (`/readyz`): the database answers, the signing
/// keys are loaded, and no shutdown has begun. `/healthz` only says the process is alive.
final class Readiness: Sendable {
    /// Asks the database a trivial question (`SELECT 1`).
    let ping: @Sendable () async throws -> Void
    let keyRing: KeyRing
    /// How long the database may take to answer the check.
    let databaseTimeout: Duration
    private let draining = NIOLockedValueBox(false)

    convenience init(database: Database, keyRing: KeyRing, databaseTimeout: Duration = .seconds(2)) {
        self.init(ping: { try await database.ping() }, keyRing: keyRing, databaseTimeout: databaseTimeout)
    }

    init(ping: @escaping @Sendable () async throws -> Void, keyRing: KeyRing, databaseTimeout: Duration) {
        self.ping = ping
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
        return await databaseAnswers() ? nil : "database not answering"
    }

    /// Whether `SELECT 1` answers within ``databaseTimeout``. The answer comes at the deadline
    /// even if the query is stuck (a task group would wait for it): the query goes on alone,
    /// bounded by the database's own deadlines.
    private func databaseAnswers() async -> Bool {
        let (ping, timeout) = (self.ping, databaseTimeout)
        let decided = NIOLockedValueBox(false)
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            @Sendable func decide(_ answer: Bool) {
                let first = decided.withLockedValue { done in
                    defer { done = true }
                    return !done
                }
                if first { continuation.resume(returning: answer) }
            }
            Task { decide((try? await ping()) != nil) }
            Task {
                try? await Task.sleep(for: timeout)
                decide(false)
            }
        }
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
