#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOConcurrencyHelpers
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

/// The system resolver (`getaddrinfo`), on a thread pool of its own: a lookup blocks its thread
/// for as long as the name's servers take, and must never hold up the pool SQLite runs on.
/// The wait is cancellable (the lookup itself is not), so a delivery's deadline also bounds it.
struct SystemHostResolver: HostResolver {
    let pool: NIOThreadPool

    func addresses(of host: String) async throws -> [IPAddress] {
        let found = try await Self.cancellable { resume in
            pool.submit { state in
                resume(state == .active ? .success(Self.lookUp(host)) : .failure(CancellationError()))
            }
        }
        guard !found.isEmpty else { throw UnresolvableHost(host: host) }
        return found
    }

    /// Waits for `start`'s answer, or throws `CancellationError` as soon as the task is cancelled.
    private static func cancellable(_ start: (@escaping @Sendable (Result<[IPAddress], any Error>) -> Void) -> Void) async throws -> [IPAddress] {
        let slot = NIOLockedValueBox<(waiter: CheckedContinuation<[IPAddress], any Error>?, cancelled: Bool)>((nil, false))
        let resume: @Sendable (Result<[IPAddress], any Error>) -> Void = { result in
            let waiter = slot.withLockedValue { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(with: result)
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let cancelled = slot.withLockedValue { state in
                    if !state.cancelled { state.waiter = continuation }
                    return state.cancelled
                }
                if cancelled { continuation.resume(throwing: CancellationError()) } else { start(resume) }
            }
        } onCancel: {
            let waiter = slot.withLockedValue { state in
                state.cancelled = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    private static func lookUp(_ host: String) -> [IPAddress] {
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
}
