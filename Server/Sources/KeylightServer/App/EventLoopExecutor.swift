import CKeylightRuntimeHook
import NIOCore
import NIOPosix

/// Where an executable's Swift tasks run.
public enum EventLoopExecutor {
    /// Makes NIO's event loops (the ones the server's sockets live on) Swift Concurrency's
    /// global executor, so a request's handler runs on the thread that read it instead of
    /// hopping to Swift's own pool and back: one thread switch fewer each way. Handlers then
    /// share those threads with I/O, which is why everything that can block (SQLite writes,
    /// bcrypt) keeps threads of its own.
    ///
    /// Executables only, as the first statement of `main`, on the main thread, once (a
    /// library must not change the process's executor). Answers false where it could not.
    ///
    /// NIO's own takeover finds the runtime's hook with `dlsym`, which in a binary linked with
    /// the static Swift runtime (`Scripts/build-static`, what operators deploy) cannot see it;
    /// there the hook is installed through the linker instead (``installThroughLinker()``), so
    /// both builds run handlers on the event loops.
    @discardableResult
    public static func adopt() -> Bool {
        if NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() { return true }
        return installThroughLinker()
    }

    /// The runtime's hook: `(job, original) -> Void`, Swift's calling convention, no context.
    private typealias EnqueueGlobalHook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    /// Installs a hook that enqueues every global job on an event loop of NIO's singleton group:
    /// the current one when the job is enqueued from one (a task resumed by I/O stays on the
    /// thread that did the I/O), else the next.
    static func installThroughLinker() -> Bool {
        withUnsafeTemporaryAllocation(of: EnqueueGlobalHook.self, capacity: 1) { slot in
            slot.baseAddress!.initialize(to: { job, _ in
                MultiThreadedEventLoopGroup.singleton.any().enqueue(ExecutorJob(job))
            })
            // A thin function value is the function's address; it is what the runtime calls.
            return slot.baseAddress!.withMemoryRebound(to: UnsafeRawPointer.self, capacity: 1) { address in
                keylight_install_enqueue_global_hook(address.pointee)
            }
        }
    }
}

extension EventLoopExecutor {
    /// Whether a new task runs on one of NIO's event loops (``adopt()`` took effect), as the
    /// server reports at start.
    public static func tasksRunOnEventLoops() async -> Bool {
        await Task.detached { MultiThreadedEventLoopGroup.currentEventLoop != nil }.value
    }
}
