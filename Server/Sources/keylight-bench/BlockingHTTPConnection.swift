#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// One keep-alive HTTP/1.1 connection on a blocking socket, for the paced client: a request is
/// one `send` and its answer a few `recv`s on the calling thread, with no event loop, task or
/// buffer type between them, so the client's own cost per request is a handful of system calls
/// (the AsyncHTTPClient version kept its CPU 80–86% busy at 4,800 requests/s, and its lateness
/// was counted in the server's latencies).
///
/// Reads only what the benchmark's server sends: a status line, headers with `Content-Length`,
/// and that many bytes. Anything else is an error, not a guess.
///
/// `@unchecked Sendable`: each connection is opened on one thread and then handed to the one
/// thread that alone uses it; nothing else touches its buffers.
final class BlockingHTTPConnection: @unchecked Sendable {
    private let descriptor: Int32
    /// Bytes read past the last answer (never, from a server that answers one request at a time).
    private var pending: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 16_384)

    /// Connects to `host:port` (IPv4 or IPv6, names through `getaddrinfo`), with `timeout` on every
    /// send and receive so a stalled server fails the request instead of hanging the thread.
    init(host: String, port: Int, timeout: TimeInterval) throws {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Self.streamType
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else {
            throw BenchError("paced-client: cannot resolve \(host)")
        }
        defer { freeaddrinfo(found) }
        var address: UnsafeMutablePointer<addrinfo>? = first
        var connected: Int32 = -1
        while let candidate = address, connected < 0 {
            let socket = socket(candidate.pointee.ai_family, candidate.pointee.ai_socktype, candidate.pointee.ai_protocol)
            if socket >= 0 {
                // Before `connect`: Linux bounds a blocking connect by the send timeout too.
                Self.limitWaits(socket, to: timeout)
                if connect(socket, candidate.pointee.ai_addr, candidate.pointee.ai_addrlen) == 0 {
                    connected = socket
                } else {
                    close(socket)
                }
            }
            address = candidate.pointee.ai_next
        }
        guard connected >= 0 else { throw BenchError("paced-client: cannot connect to \(host):\(port): \(String(cString: strerror(errno)))") }
        descriptor = connected
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Every send and receive on `socket` fails after `timeout` instead of waiting on.
    private static func limitWaits(_ socket: Int32, to timeout: TimeInterval) {
        var limit = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    #if canImport(Glibc)
    private static let streamType = Int32(SOCK_STREAM.rawValue)
    #else
    private static let streamType = SOCK_STREAM
    #endif

    /// Sends `request` (a whole HTTP/1.1 request) and answers the status of the answer, once
    /// all of its body has been read.
    func exchange(_ request: [UInt8]) throws -> Int {
        try request.withUnsafeBytes { bytes in
            var sent = 0
            while sent < bytes.count {
                let count = send(descriptor, bytes.baseAddress! + sent, bytes.count - sent, 0)
                guard count > 0 else { throw BenchError("paced-client: send failed: \(String(cString: strerror(errno)))") }
                sent += count
            }
        }
        var head: HTTPAnswerHead?
        while true {
            if head == nil { head = try HTTPAnswerHead(parsing: pending) }
            if let head, pending.count >= head.length + head.contentLength {
                pending.removeFirst(head.length + head.contentLength)
                return head.status
            }
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress!, $0.count, 0) }
            guard count > 0 else {
                throw BenchError(count == 0 ? "paced-client: the server closed the connection" : "paced-client: receive failed: \(String(cString: strerror(errno)))")
            }
            pending.append(contentsOf: chunk[0..<count])
        }
    }
}

/// The status line and headers of an HTTP/1.1 answer: what ``BlockingHTTPConnection`` needs of them.
struct HTTPAnswerHead: Equatable {
    var status: Int
    /// Bytes of the status line and headers, the blank line included.
    var length: Int
    var contentLength: Int

    /// nil while `bytes` do not hold the whole head yet; throws for a head that is not one.
    init?(parsing bytes: [UInt8]) throws {
        let end: [UInt8] = Array("\r\n\r\n".utf8)
        guard bytes.count >= end.count,
              let blank = (0...(bytes.count - end.count)).first(where: { bytes[$0..<($0 + end.count)].elementsEqual(end) }) else {
            guard bytes.count < 65_536 else { throw BenchError("paced-client: an answer's head is over 64 KiB") }
            return nil
        }
        let lines = String(decoding: bytes[0..<blank], as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.first?.split(separator: " ") ?? []
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            throw BenchError("paced-client: not an HTTP/1.1 status line: \(lines.first ?? "")")
        }
        let lengths = lines.dropFirst().compactMap { line -> Int? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
            return Int(parts[1].trimmingCharacters(in: .whitespaces))
        }
        guard lengths.count == 1, let contentLength = lengths.first, contentLength >= 0 else {
            throw BenchError("paced-client: an answer without exactly one Content-Length")
        }
        self.status = status
        self.length = blank + end.count
        self.contentLength = contentLength
    }
}
