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
    /// library must not change the process's executor). Answers false where it could not.
    @discardableResult
    public static func adopt() -> Bool {
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }
}
