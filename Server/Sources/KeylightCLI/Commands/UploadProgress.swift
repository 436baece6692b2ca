import Crypto
import Foundation
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file's bytes in 256 KiB buffers, never the whole file in memory. Each read runs on NIO's
/// blocking pool: this executable's tasks run on the event loops (``EventLoopExecutor``), and a
/// read from a slow disk must not hold up the connection's I/O.
struct FileUploadChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    static let chunkSize = 256 * 1_024

    let descriptor: Int32
    let length: Int64
    let meter: UploadMeter

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(descriptor: descriptor, length: length, meter: meter)
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let descriptor: Int32
        let length: Int64
        let meter: UploadMeter
        var offset: Int64 = 0

        mutating func next() async throws -> ByteBuffer? {
            guard offset < length else {
                meter.finish()
                return nil
            }
            let (descriptor, position) = (self.descriptor, offset)
            let count = Int(Swift.min(Int64(FileUploadChunks.chunkSize), length - offset))
            let chunk = try await NIOThreadPool.singleton.runIfActive { try FileUploadChunks.read(descriptor, at: position, count: count) }
            offset += Int64(chunk.readableBytes)
            meter.record(chunk)
            return chunk
        }
    }

    /// `count` bytes at `position`; a file that ends sooner changed under the upload, which the
    /// declared Content-Length cannot survive.
    static func read(_ descriptor: Int32, at position: Int64, count: Int) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        while buffer.readableBytes < count {
            let done = buffer.readableBytes
            var result = 0
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count - done) { raw in
                result = pread(descriptor, raw.baseAddress, count - done, off_t(position + Int64(done)))
                return Swift.max(result, 0)
            }
            if result < 0, errno == EINTR { continue }
            guard result >= 0 else { throw ReleaseFailure("reading the file failed: \(String(cString: strerror(errno)))") }
            guard result > 0 else { throw ReleaseFailure("the file ended at byte \(position + Int64(done)): it changed while uploading") }
        }
        return buffer
    }
}

/// The upload's tally: bytes read and their SHA-256 (for the check of the server's answer), when
/// they last moved (for the watchdog), and the progress line. Shared by the body's iterator and
/// the watchdog task.
final class UploadMeter: @unchecked Sendable {
    // @unchecked: every stored var is read and written under `lock`.
    /// The server drops an upload after 30 s without a byte; this ends one whose connection went
    /// quiet without closing (a dead network), which would otherwise wait forever.
    static let stallSeconds: Int64 = 60

    let total: Int64
    private let drawsProgress: Bool
    private let started: ContinuousClock.Instant
    private let lock = NSLock()
    private var hasher = SHA256()
    private var sent: Int64 = 0
    private var lastMove: ContinuousClock.Instant
    private var throttle = RedrawThrottle()
    private var lineOpen = false

    init(total: Int64, drawsProgress: Bool) {
        self.total = total
        self.drawsProgress = drawsProgress
        started = .now
        lastMove = started
    }

    func record(_ chunk: ByteBuffer) {
        let line: String? = lock.withLock {
            chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            sent += Int64(chunk.readableBytes)
            let now = ContinuousClock.now
            lastMove = now
            guard drawsProgress, throttle.shouldDraw(at: now) else { return nil }
            lineOpen = true
            return UploadProgress.line(sent: sent, total: total, elapsed: now - started)
        }
        if let line { Self.draw(line) }
    }

    /// The body's end: the whole line is drawn once more, at 100%.
    func finish() {
        let line: String? = lock.withLock {
            guard drawsProgress else { return nil }
            lineOpen = true
            return UploadProgress.line(sent: sent, total: total, elapsed: ContinuousClock.now - started)
        }
        if let line { Self.draw(line) }
    }

    /// Ends the progress line, so what is printed next starts on a line of its own.
    func endLine() {
        if lock.withLock({ () -> Bool in defer { lineOpen = false }; return lineOpen }) {
            FileHandle.standardError.write(Data("\n".utf8))
        }
    }

    /// The lowercase hex SHA-256 of the file, once all of it was read.
    var sha256: String? {
        lock.withLock {
            guard sent == total else { return nil }
            return hasher.finalize().map { String(format: "%02x", $0) }.joined()
        }
    }

    /// Returns once the whole file was read; throws when nothing was read for `limit` before.
    func watchForStall(limit: Duration) async throws {
        while true {
            try await Task.sleep(for: .seconds(1))
            let (done, idle) = lock.withLock { (sent >= total, ContinuousClock.now - lastMove) }
            if done { return }
            if idle >= limit { throw ReleaseFailure("the upload stalled: nothing was sent for \(Self.stallSeconds) s") }
        }
    }

    private static func draw(_ line: String) {
        // `\r` back to the line's start, ESC[K clears what a longer line left.
        FileHandle.standardError.write(Data(("\r" + line + "\u{1B}[K").utf8))
    }
}

/// At most one redraw per interval, the first at once.
struct RedrawThrottle {
    var interval: Duration = .milliseconds(100)
    private(set) var last: ContinuousClock.Instant?

    mutating func shouldDraw(at now: ContinuousClock.Instant) -> Bool {
        if let last, now - last < interval { return false }
        last = now
        return true
    }
}

/// The progress line: `[#####-----]  42%  12.3 / 29.1 MB  4.2 MB/s` (MB of 10^6 bytes).
enum UploadProgress {
    static let barWidth = 24

    static func line(sent: Int64, total: Int64, elapsed: Duration) -> String {
        let fraction = total > 0 ? min(1, max(0, Double(sent) / Double(total))) : 1
        let filled = Int(fraction * Double(barWidth))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled)
        let percent = String(Int(fraction * 100))
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let speed = seconds > 0 ? Double(sent) / seconds / 1e6 : 0
        return "[\(bar)] \(String(repeating: " ", count: max(0, 3 - percent.count)))\(percent)%  \(megabytes(sent)) / \(megabytes(total)) MB  \(String(format: "%.1f", speed)) MB/s"
    }

    static func megabytes(_ bytes: Int64) -> String {
        String(format: "%.1f", Double(bytes) / 1e6)
    }
}
