import NIOCore
import NIOPosix

/// Where an executable's Swift tasks run.
public enum EventLoopExecutor {
    /// Makes NIO's event loops (the ones the server's sockets live on) Swift Concurrency's
    /// global executor, so a request's handler runs on the thread that read it instead of
    /// hopping to Swift's own pool and back: one thread switch fewer each way, measured at
    /// about a fifth of a `/healthz` request's CPU. Handlers then share those threads with I/O,
    /// which is why everything that can block (SQLite writes, bcrypt) keeps its own threads.
    ///
    /// Executables only, as the first statement of `main`, on the main thread, once (a
    /// library must not change the process's executor). Answers false where it could not:
    /// NIO finds the runtime's hook with `dlsym`, and in a binary linked with the static Swift
    /// runtime (`Scripts/build-static`) the hook is a local symbol, so there tasks stay on
    /// Swift's own pool. A task-executor preference over the event loops works there, and was
    /// measured in issue 39 (docs/PERFORMANCE.md): validate's CPU was the same and `/healthz`
    /// cost about 15 µs more, so it was not kept.
    @discardableResult
    public static func adopt() -> Bool {
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }
}
