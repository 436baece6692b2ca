import Hummingbird
import NIOCore

/// Per-request context: Hummingbird's core storage plus the client's address (for per-IP
/// rate limits) and the request id echoed in `X-Keylight-Request-Id`.
public struct KeylightRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// Set by ``RequestObservationMiddleware`` before any handler runs.
    public var requestId: String = ""

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// The key for per-IP limits; requests without a socket (router tests) share one bucket.
    var clientAddress: String { remoteAddress?.ipAddress ?? "local" }
}
