import Hummingbird
import NIOCore

/// Per-request context: Hummingbird's core storage plus the client's address (for per-IP
/// rate limits) and the request id echoed in `X-Keylight-Request-Id`.
public struct KeylightRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// Set by ``RequestObservationMiddleware`` before any handler runs.
    public var requestId: String = ""
    /// The client: the socket peer, or what a trusted proxy forwarded (set by ``RequestObservationMiddleware``).
    var client: IPAddress?
    /// Who is acting, on admin routes (set by ``AdminAuthMiddleware``).
    var principal: Principal?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        client = remoteAddress.flatMap(IPAddress.init)
    }

    /// The key for per-IP limits; requests without a socket (router tests) share one bucket.
    var rateLimitKey: IPAddress { client?.rateLimitKey ?? .unspecified }

    /// The acting principal; admin routes only (their middleware sets it or answers 401).
    func requirePrincipal() throws(APIError) -> Principal {
        guard let principal else { throw .unauthorized }
        return principal
    }

    /// The audit log's actor for this request.
    var actor: AuditActor { principal?.actor ?? AuditActor(name: "unauthenticated", kind: .system, id: nil) }
}
