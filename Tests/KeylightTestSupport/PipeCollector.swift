import Foundation

/// Collects what a child process writes to a pipe, on a thread of its own, until end of file.
///
/// Not `FileHandle.readabilityHandler`: that registers the descriptor with libdispatch's epoll
/// loop, and with many short-lived children (a server killed with SIGKILL, its pipe closed while
/// still registered) the test process crashed in `_dispatch_event_loop_drain` (signal 11, a known
/// swift-corelibs-libdispatch fault). A blocking `read(2)` on a dedicated thread involves no
/// dispatch source; the thread keeps the pipe open until it has read the end.
public final class PipeCollector: Sendable {
    private let box = Box()

    /// Starts reading `pipe`'s read end. Call after the process has started, so that the parent's
    /// copy of the write end is closed and the end of file arrives when the child exits.
    public init(_ pipe: Pipe) {
        let box = self.box
        let thread = Thread {
            let descriptor = pipe.fileHandleForReading.fileDescriptor
            var buffer = [UInt8](repeating: 0, count: 16_384)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count > 0 {
                    box.append(buffer[0..<count])
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            // The pipe is captured until here: its descriptor cannot close under the read.
            withExtendedLifetime(pipe) {}
        }
        thread.name = "PipeCollector"
        thread.start()
    }

    /// Everything read so far, as UTF-8 (invalid bytes replaced).
    public var text: String { box.text }

    private final class Box: @unchecked Sendable {
        // @unchecked: `bytes` is only touched under `lock`.
        private let lock = NSLock()
        private var bytes: [UInt8] = []

        func append(_ slice: ArraySlice<UInt8>) {
            lock.lock()
            bytes.append(contentsOf: slice)
            lock.unlock()
        }

        var text: String {
            lock.lock()
            defer { lock.unlock() }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
