import Crypto
import Foundation
import Keylight
import KeylightCore
@testable import KeylightTrust
import Testing

/// Messages waiting for one side, in order; closing wakes a waiting reader with an error.
actor Mailbox {
    private var queue: [TrustMessage] = []
    private var waiters: [CheckedContinuation<TrustMessage, any Error>] = []
    private var closed = false

    func put(_ message: TrustMessage) {
        if waiters.isEmpty { queue.append(message) } else { waiters.removeFirst().resume(returning: message) }
    }

    func take() async throws -> TrustMessage {
        if !queue.isEmpty { return queue.removeFirst() }
        if closed { throw TrustError.protocolError }
        return try await withCheckedThrowingContinuation { waiters.append($0) }
    }

    func close() {
        closed = true
        for waiter in waiters { waiter.resume(throwing: TrustError.protocolError) }
        waiters = []
    }
}

/// An in-memory duplex pipe; `tamper` may rewrite what this end sends.
final class MemoryChannel: TrustChannel, @unchecked Sendable {
    // @unchecked: `tamper` is set before the session starts; `sentLog` is guarded by `lock`.
    private let inbox: Mailbox
    private let outbox: Mailbox
    var tamper: (@Sendable (TrustMessage) -> TrustMessage)?
    private let lock = NSLock()
    private var sentLog: [TrustMessage] = []

    private init(inbox: Mailbox, outbox: Mailbox) {
        self.inbox = inbox
        self.outbox = outbox
    }

    static func pair() -> (MemoryChannel, MemoryChannel) {
        let toA = Mailbox(), toB = Mailbox()
        return (MemoryChannel(inbox: toA, outbox: toB), MemoryChannel(inbox: toB, outbox: toA))
    }

    var sent: [TrustMessage] { lock.withLock { sentLog } }

    func send(_ message: TrustMessage) async throws {
        let outgoing = tamper?(message) ?? message
        lock.withLock { sentLog.append(outgoing) }
        await outbox.put(outgoing)
    }

    func receive() async throws -> TrustMessage {
        try await inbox.take()
    }

    /// This end hangs up: the other end's reads fail once its queue is empty.
    func hangUp() async {
        await outbox.close()
    }
}

/// A device for tests: an identity and trust store in memory (or on disk).
struct TestDevice {
    let store: any SecureStore
    let node: TrustNode

    init(_ name: String, store: any SecureStore = InMemoryStore(), now: @escaping @Sendable () -> Int64 = { 1_800_000_000 }) throws {
        self.store = store
        node = TrustNode(identity: try DeviceIdentity.loadOrCreate(in: store, name: name), store: TrustStore(store: store), now: now)
    }

    func invite(lifetime: Int64 = 600) throws -> Invitation {
        var random = SystemRandomNumberGenerator()
        let invitation = Invitation(from: node.identity, now: node.now(), lifetime: lifetime, random: &random)
        try node.store.remember(issued: invitation, now: node.now())
        return invitation
    }
}

/// Runs `client` against `server` over a memory pipe; answers both results.
func session<A: Sendable, B: Sendable>(
    server: @escaping @Sendable (MemoryChannel) async throws -> A, client: @escaping @Sendable (MemoryChannel) async throws -> B,
    tamperServer: (@Sendable (TrustMessage) -> TrustMessage)? = nil, tamperClient: (@Sendable (TrustMessage) -> TrustMessage)? = nil
) async -> (Result<A, any Error>, Result<B, any Error>) {
    let (serverEnd, clientEnd) = MemoryChannel.pair()
    serverEnd.tamper = tamperServer
    clientEnd.tamper = tamperClient
    // Whichever side finishes hangs up, so the other never waits for a message that cannot come.
    async let served = Result<A, any Error> {
        defer { Task { await serverEnd.hangUp() } }
        return try await server(serverEnd)
    }
    async let connected = Result<B, any Error> {
        defer { Task { await clientEnd.hangUp() } }
        return try await client(clientEnd)
    }
    return await (served, connected)
}

extension Result where Failure == any Error {
    init(_ body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }

    var trustError: TrustError? { if case .failure(let error) = self { return error as? TrustError } else { return nil } }
}
