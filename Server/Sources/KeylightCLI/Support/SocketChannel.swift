import Foundation
import KeylightTrust
#if canImport(Glibc)
import Glibc
private let streamSocket = Int32(SOCK_STREAM.rawValue)
private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 { Glibc.connect(fd, address, length) }
private func systemAccept(_ fd: Int32) -> Int32 { Glibc.accept(fd, nil, nil) }
#elseif canImport(Darwin)
import Darwin
private let streamSocket = SOCK_STREAM
private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 { Darwin.connect(fd, address, length) }
private func systemAccept(_ fd: Int32) -> Int32 { Darwin.accept(fd, nil, nil) }
#endif

/// A TCP connection carrying newline-delimited trust messages. Blocking I/O with a receive
/// timeout: the CLI runs one session at a time.
final class SocketChannel: TrustChannel, @unchecked Sendable {
    // @unchecked: one session uses a channel from one task at a time; `buffer` is only touched in receive().
    private let fd: Int32
    private var buffer = Data()

    init(fd: Int32, timeoutSeconds: Int = 30) {
        self.fd = fd
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ message: TrustMessage) async throws {
        let data = try TrustFraming.encode(message)
        try data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(fd, raw.baseAddress! + offset, raw.count - offset)
                guard written > 0 else { throw SocketError("send failed: \(String(cString: strerror(errno)))") }
                offset += written
            }
        }
    }

    func receive() async throws -> TrustMessage {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = buffer[buffer.startIndex..<newline]
                buffer = Data(buffer[(newline + 1)...])
                return try TrustFraming.decode(Data(line))
            }
            guard buffer.count <= TrustFraming.maxLineBytes else { throw TrustError.protocolError }
            var chunk = [UInt8](repeating: 0, count: 4_096)
            let count = read(fd, &chunk, chunk.count)
            guard count > 0 else { throw SocketError(count == 0 ? "the other device closed the connection" : "receive failed: \(String(cString: strerror(errno)))") }
            buffer.append(contentsOf: chunk[0..<count])
        }
    }

    /// Connects to `host:port`.
    static func connect(to endpoint: String) throws -> SocketChannel {
        guard let colon = endpoint.lastIndex(of: ":"), let port = UInt16(endpoint[endpoint.index(after: colon)...]) else {
            throw SocketError("expected HOST:PORT, got \(endpoint)")
        }
        let host = String(endpoint[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = streamSocket
        var results: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &results) == 0, let first = results else { throw SocketError("cannot resolve \(host)") }
        defer { freeaddrinfo(results) }
        var info: UnsafeMutablePointer<addrinfo>? = first
        while let current = info {
            let fd = socket(current.pointee.ai_family, current.pointee.ai_socktype, current.pointee.ai_protocol)
            if fd >= 0 {
                if systemConnect(fd, current.pointee.ai_addr, current.pointee.ai_addrlen) == 0 { return SocketChannel(fd: fd) }
                close(fd)
            }
            info = current.pointee.ai_next
        }
        throw SocketError("cannot connect to \(endpoint): \(String(cString: strerror(errno)))")
    }
}

/// A listening TCP socket.
final class SocketListener: @unchecked Sendable {
    // @unchecked: used from one task.
    let fd: Int32
    let port: Int

    init(host: String, port: Int) throws {
        let fd = socket(AF_INET, streamSocket, 0)
        guard fd >= 0 else { throw SocketError("cannot create a socket") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(fd)
            throw SocketError("--host must be an IPv4 address")
        }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(fd, 8) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw SocketError("cannot listen on \(host):\(port): \(reason)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        self.fd = fd
        self.port = Int(UInt16(bigEndian: actual.sin_port))
    }

    deinit { close(fd) }

    func accept() throws -> SocketChannel {
        let client = systemAccept(fd)
        guard client >= 0 else { throw SocketError("accept failed: \(String(cString: strerror(errno)))") }
        return SocketChannel(fd: client)
    }
}

struct SocketError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
