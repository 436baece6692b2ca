import Foundation
import HummingbirdBcrypt
import NIOConcurrencyHelpers
import NIOPosix

/// Runs bcrypt on threads of its own with a bounded queue. bcrypt at cost 12 takes a quarter
/// of a second of CPU: on a shared pool (NIO's, which SQLite's queries also use) a burst of
/// sign-in attempts would queue ahead of every SDK request. Past ``capacity`` waiting or running
/// checks, a new one is refused with ``Busy`` (answered 429) instead of queueing.
public final class PasswordHasher: Sendable {
    /// The hasher's queue is full.
    public struct Busy: Error, Sendable {}

    /// Checks running or queued at most.
    public let capacity: Int
    private let pool: NIOThreadPool
    private let inFlight = NIOLockedValueBox(0)

    /// Starts `threads` threads (shut them down with ``shutdown()``).
    public init(threads: Int = 1, capacity: Int = 16) {
        self.capacity = max(1, capacity)
        pool = NIOThreadPool(numberOfThreads: max(1, threads))
        pool.start()
    }

    public func hash(_ password: String, cost: UInt8) async throws -> String {
        try await run { Bcrypt.hash(password, cost: cost) }
    }

    public func verify(_ password: String, hash: String) async throws -> Bool {
        try await run { Bcrypt.verify(password, hash: hash) }
    }

    /// A check against a hash of a random string nobody knows, for sign-ins that have no user
    /// to check against: they take as long as a real one. The decoy itself is made on the
    /// hasher's threads the first time (a cost-12 hash would otherwise hold a concurrency thread).
    public func verifyDecoy(_ password: String) async throws -> Bool {
        try await run { Bcrypt.verify(password, hash: Self.decoyHash) }
    }

    private static let decoyHash = Bcrypt.hash(UUID().uuidString, cost: 12)

    /// A hasher for the length of `body` (command-line tools), shut down afterwards.
    public static func withHasher<T>(_ body: (PasswordHasher) async throws -> T) async throws -> T {
        let hasher = PasswordHasher()
        do {
            let result = try await body(hasher)
            await hasher.shutdown()
            return result
        } catch {
            await hasher.shutdown()
            throw error
        }
    }

    public func shutdown() async {
        try? await pool.shutdownGracefully()
    }

    private func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws -> T {
        let admitted = inFlight.withLockedValue { count in
            guard count < capacity else { return false }
            count += 1
            return true
        }
        guard admitted else { throw Busy() }
        defer { inFlight.withLockedValue { $0 -= 1 } }
        return try await pool.runIfActive(work)
    }
}
