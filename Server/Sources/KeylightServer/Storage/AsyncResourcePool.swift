import NIOConcurrencyHelpers

/// A fixed set of resources handed to one task at a time, first come first served.
///
/// Serves as the SQLite connection pool (N connections) and as the in-process writer gate
/// (one token).
final class AsyncResourcePool<Resource: Sendable>: Sendable {
    private struct State {
        var idle: [Resource]
        var waiters: [CheckedContinuation<Resource, any Error>] = []
        var closed = false
    }

    private let state: NIOLockedValueBox<State>
    /// Receives resources given back after ``close()`` (they were in use when it was called).
    private let discard: @Sendable (Resource) -> Void

    init(_ resources: [Resource], discard: @escaping @Sendable (Resource) -> Void = { _ in }) {
        state = NIOLockedValueBox(State(idle: resources))
        self.discard = discard
    }

    /// Waits for a resource. Throws `StorageError.closed` after ``close()``.
    func acquire() async throws -> Resource {
        try await withCheckedThrowingContinuation { continuation in
            let result: Result<Resource, any Error>? = state.withLockedValue { state in
                if state.closed { return .failure(StorageError.closed) }
                if let resource = state.idle.popLast() { return .success(resource) }
                state.waiters.append(continuation)
                return nil
            }
            if let result { continuation.resume(with: result) }
        }
    }

    /// Returns a resource: to the longest waiter, else to the idle set; after ``close()``, to `discard`.
    func release(_ resource: Resource) {
        let next: ReleaseStep = state.withLockedValue { state in
            if state.closed { return .discard }
            if state.waiters.isEmpty {
                state.idle.append(resource)
                return .idle
            }
            return .waiter(state.waiters.removeFirst())
        }
        switch next {
        case .waiter(let waiter): waiter.resume(returning: resource)
        case .idle: break
        case .discard: discard(resource)
        }
    }

    /// Runs `body` with a resource held for its whole duration.
    func withResource<R>(_ body: (Resource) async throws -> R) async throws -> R {
        let resource = try await acquire()
        do {
            let result = try await body(resource)
            release(resource)
            return result
        } catch {
            release(resource)
            throw error
        }
    }

    private enum ReleaseStep {
        case waiter(CheckedContinuation<Resource, any Error>), idle, discard
    }

    /// Fails every waiter and every later `acquire`; returns the resources that were idle (those
    /// in use go to `discard` when released).
    func close() -> [Resource] {
        let (waiters, idle) = state.withLockedValue { state in
            state.closed = true
            defer { state.waiters = []; state.idle = [] }
            return (state.waiters, state.idle)
        }
        for waiter in waiters { waiter.resume(throwing: StorageError.closed) }
        return idle
    }
}
