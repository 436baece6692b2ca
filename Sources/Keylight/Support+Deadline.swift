import Foundation

/// Runs `operation` and answers its result, or nil once `seconds` have passed, whichever comes
/// first. The operation is cancelled at the deadline and may finish in the background; the
/// caller never waits longer (a transport that ignores cancellation cannot hold a quitting app).
func withDeadline<Value: Sendable>(seconds: Double, _ operation: @escaping @Sendable () async -> Value) async -> Value? {
    let answered = Locked(false)
    let work = Locked<Task<Void, Never>?>(nil)
    let timer = Locked<Task<Void, Never>?>(nil)
    return await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
        func finish(_ value: Value?) {
            let first = answered.withLock { done -> Bool in
                defer { done = true }
                return !done
            }
            guard first else { return }
            continuation.resume(returning: value)
            work.withLock { $0?.cancel() }
            timer.withLock { $0?.cancel() }
        }
        work.withLock { $0 = Task { finish(await operation()) } }
        timer.withLock {
            $0 = Task {
                try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000))
                finish(nil)
            }
        }
    }
}
