import Foundation

/// One thread of its own that runs, in order, the jobs of tasks that prefer it
/// (`withTaskExecutorPreference`).
///
/// The hot write transactions run here: a transaction on the kept SQLite connection is
/// synchronous work (it never suspends between `BEGIN` and `COMMIT`), so it is one hop here and
/// one back, and it never holds up NIO's event loops, whose timers (request deadlines, idle
/// closes) must fire on time whatever the database is doing.
///
/// The thread starts with the first job and ends when ``stop()`` finds nothing queued; a job
/// enqueued after that starts it again, so no job is ever left without a thread to run it.
/// Whenever the queue runs dry it calls ``whenIdle`` first (the hot writer commits the group of
/// transactions it kept open while more were queued), so work left pending by one job is
/// finished before the thread waits.
///
/// `@unchecked Sendable`: `jobs`, `running`, `stopping`, `current` and `idleHandler` are read and
/// written only with `condition` locked.
final class WriterThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let name: String
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var running = false
    private var stopping = false
    /// The thread draining the queue now (there is at most one).
    private var current: pthread_t?
    private var idleHandler: @Sendable () -> Void = {}

    /// `name` names the thread (Linux keeps its first 15 bytes).
    init(name: String) {
        self.name = name
    }

    /// Runs `body` on this thread: one hop here, and one back when it returns.
    func run<R>(_ body: () async throws -> R) async rethrows -> R {
        // The preference takes effect at the next switch of executor, which entering `enter` (a
        // nonisolated async function) is; code in the closure before that would still run where
        // the caller is. `Task.yield()` would not do: it enqueued on the global executor.
        try await withTaskExecutorPreference(self) { try await Self.enter(body) }
    }

    private static func enter<R>(_ body: () async throws -> R) async rethrows -> R {
        try await body()
    }

    /// Called on this thread each time its queue is empty, before it waits for more.
    var whenIdle: @Sendable () -> Void {
        get { condition.lock(); defer { condition.unlock() }; return idleHandler }
        set { condition.lock(); idleHandler = newValue; condition.unlock() }
    }

    /// Whether jobs are waiting behind the one running now.
    var hasQueuedJobs: Bool { queuedJobs > 0 }

    /// Jobs waiting behind the one running now.
    var queuedJobs: Int {
        condition.lock()
        defer { condition.unlock() }
        return jobs.count
    }

    func enqueue(_ job: UnownedJob) {
        condition.lock()
        jobs.append(job)
        let start = !running
        running = true
        condition.signal()
        condition.unlock()
        if start { startThread() }
    }

    /// Ends the thread once the jobs queued now have run.
    func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    /// Whether the calling code runs on this executor's thread.
    var isCurrentThread: Bool {
        condition.lock()
        defer { condition.unlock() }
        return current.map { pthread_equal($0, pthread_self()) != 0 } ?? false
    }

    private func startThread() {
        let thread = Thread { [self] in
            // Named from inside, for profilers and debuggers: on Linux a name set before start()
            // is not the thread's, which keeps the name of the thread that started it.
            Thread.current.name = name
            condition.lock()
            current = pthread_self()
            condition.unlock()
            drain()
        }
        thread.start()
    }

    private func drain() {
        let executor = asUnownedTaskExecutor()
        while true {
            condition.lock()
            if jobs.isEmpty {
                let idle = idleHandler
                condition.unlock()
                idle()
                condition.lock()
                while jobs.isEmpty && !stopping { condition.wait() }
                if jobs.isEmpty {
                    // Stopped stays set: a job after stop() gets a thread that ends once it has run.
                    running = false
                    current = nil
                    condition.unlock()
                    return
                }
            }
            // One at a time, so `hasQueuedJobs` sees the ones behind the running job.
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: executor)
        }
    }
}
