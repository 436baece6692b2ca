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

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        client = remoteAddress.flatMap(IPAddress.init)
    }

    /// The key for per-IP limits; requests without a socket (router tests) share one bucket.
    var rateLimitKey: IPAddress { client?.rateLimitKey ?? .unspecified }
}
