import NIOConcurrencyHelpers

/// Runs `operation` but gives up after `limit`, throwing ``StorageError/timedOut``.
///
/// The operation runs in a task of its own, so a call that never returns (a PostgreSQL query
/// on a connection the server killed is one) cannot hold its caller: the caller is answered at
/// the deadline and the stuck task is cancelled and left behind. Structured concurrency would
/// wait for it; that wait is exactly the hang this exists to end.
func withDeadline<T: Sendable>(_ limit: Duration, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    let outcome = OnceResult<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            outcome.arm(continuation)
            let work = Task {
                do {
                    outcome.finish(.success(try await operation()))
                } catch {
                    outcome.finish(.failure(error))
                }
            }
            let timer = Task {
                try? await Task.sleep(for: limit)
                if outcome.finish(.failure(StorageError.timedOut)) { work.cancel() }
            }
            outcome.onFinish { timer.cancel() }
        }
    } onCancel: {
        outcome.finish(.failure(CancellationError()))
    }
}

/// The first of several racing results, handed to a continuation exactly once.
private final class OnceResult<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var early: Result<T, any Error>?
        var done = false
        var cleanup: (@Sendable () -> Void)?
    }
    private let state = NIOLockedValueBox(State())

    func arm(_ continuation: CheckedContinuation<T, any Error>) {
        let early: Result<T, any Error>? = state.withLockedValue { state in
            if let early = state.early { return early }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    /// Runs `cleanup` once a result is in (at once if it already is).
    func onFinish(_ cleanup: @escaping @Sendable () -> Void) {
        let runNow = state.withLockedValue { state in
            if state.done { return true }
            state.cleanup = cleanup
            return false
        }
        if runNow { cleanup() }
    }

    /// True when this result was the first.
    @discardableResult
    func finish(_ result: Result<T, any Error>) -> Bool {
        let (continuation, cleanup, first): (CheckedContinuation<T, any Error>?, (@Sendable () -> Void)?, Bool) = state.withLockedValue { state in
            guard !state.done else { return (nil, nil, false) }
            state.done = true
            if state.continuation == nil { state.early = result }
            let pending = (state.continuation, state.cleanup)
            state.continuation = nil
            state.cleanup = nil
            return (pending.0, pending.1, true)
        }
        continuation?.resume(with: result)
        cleanup?()
        return first
    }
}
