import NIOCore
import NIOPosix

/// NIO's event loops as the executor of the server's tasks, so a request's handler runs on the
/// thread that read the request instead of hopping to Swift's own pool and back: one thread
/// switch fewer each way, about a fifth of a `/healthz` request's CPU (a third of validate's
/// throughput). Handlers then share those threads with I/O, which is why everything that can
/// block (SQLite writes, bcrypt) keeps threads of its own.
///
/// A task executor preference (`withTaskExecutorPreference`), which every child task of the
/// server inherits (each connection's handler is one), rather than NIO's takeover of the global
/// executor: that finds the runtime's hook by `dlsym`, and in a binary linked with the static
/// Swift runtime (`Scripts/build-static`, what operators deploy) the hook is a local symbol, so
/// the takeover silently did nothing there (measured: 70 % of validate's CPU was on Dispatch's
/// threads, 3.4× `/healthz` instead of 2.3×).
public final class EventLoopExecutor: TaskExecutor {
    private let group: MultiThreadedEventLoopGroup

    /// Over the event loops Hummingbird serves on by default.
    public static let singleton = EventLoopExecutor(group: .singleton)

    init(group: MultiThreadedEventLoopGroup) {
        self.group = group
    }

    /// Runs `body` with this executor preferred, for `body` and every child task it starts.
    public func run<R>(_ body: () async throws -> R) async rethrows -> R {
        try await withTaskExecutorPreference(self) { try await Self.enter(body) }
    }

    /// A nonisolated async call: the switch of executor where the preference takes effect.
    private static func enter<R>(_ body: () async throws -> R) async rethrows -> R {
        try await body()
    }

    public func enqueue(_ job: UnownedJob) {
        // `any()` is the loop this thread runs, when it runs one of the group's: a job resumed
        // by a socket event stays where it is.
        let executor = asUnownedTaskExecutor()
        group.any().execute { job.runSynchronously(on: executor) }
    }
}
