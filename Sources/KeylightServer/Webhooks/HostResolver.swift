#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOPosix

/// Looks a host name up. Injected so tests can answer names such as `127.evil.example` without
/// a DNS server.
protocol HostResolver: Sendable {
    /// Every address the name has; throws when it has none.
    func addresses(of host: String) async throws -> [IPAddress]
}

/// A name that does not resolve.
struct UnresolvableHost: Error, CustomStringConvertible {
    var host: String
    var description: String { "\(host) does not resolve" }
}

#if canImport(Darwin)
private let streamSocketType = SOCK_STREAM
#else
private let streamSocketType = CInt(SOCK_STREAM.rawValue)
#endif

/// The system resolver (`getaddrinfo`), run on NIO's blocking-work pool so a slow DNS server
/// parks a pool thread rather than a cooperative one.
struct SystemHostResolver: HostResolver {
    var pool: NIOThreadPool = .singleton

    func addresses(of host: String) async throws -> [IPAddress] {
        let found = try await pool.runIfActive { () -> [IPAddress] in
            var hints = addrinfo()
            hints.ai_socktype = streamSocketType
            var list: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
            defer { freeaddrinfo(first) }
            var addresses: [IPAddress] = []
            var entry: UnsafeMutablePointer<addrinfo>? = first
            while let current = entry {
                if let sockaddr = current.pointee.ai_addr {
                    switch CInt(sockaddr.pointee.sa_family) {
                    case NIOBSDSocket.AddressFamily.inet.rawValue:
                        let v4 = sockaddr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
                        if let address = IPAddress(SocketAddress(v4, host: host)) { addresses.append(address) }
                    case NIOBSDSocket.AddressFamily.inet6.rawValue:
                        let v6 = sockaddr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
                        if let address = IPAddress(SocketAddress(v6, host: host)) { addresses.append(address) }
                    default:
                        break
                    }
                }
                entry = current.pointee.ai_next
            }
            return addresses
        }
        guard !found.isEmpty else { throw UnresolvableHost(host: host) }
        return found
    }
}
