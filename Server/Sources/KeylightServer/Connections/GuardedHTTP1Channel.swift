import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// Hummingbird's HTTP/1.1 child channel with Keylight's connection limits in front of it: a
/// connection over ``ConnectionLimits/maxConnections`` is answered 503 and closed before any
/// byte of it is parsed, and every request must arrive whole within the request timeout.
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let inner: HTTP1Channel
    let limits: ConnectionLimits
    let gauge: ConnectionGauge

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let admitted = gauge.admit()
        if admitted {
            let gauge = self.gauge
            channel.closeFuture.whenComplete { _ in gauge.release() }
        } else {
            logger.debug("connection refused: open connection limit reached", metadata: ["limit": .stringConvertible(gauge.limit)])
        }
        let timeout = TimeAmount(limits.requestTimeout)
        let uploadIdle = TimeAmount(limits.uploadIdleTimeout)
        // Over the limit the connection is still set up (a failed set-up would end the server's
        // accept loop), but its first handler answers 503 and closes it before a byte is parsed.
        return inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let operations = channel.pipeline.syncOperations
            guard admitted else {
                try operations.addHandler(OverCapacityHandler(), position: .first)
                return value
            }
            let deadline = RequestDeadlineHandler(timeout: timeout, uploadIdleTimeout: uploadIdle)
            try operations.addHandler(deadline, position: .first)
            let state = try operations.handler(type: HTTPConnectionStateHandler.self)
            try operations.addHandler(RequestProgressHandler(deadline: deadline), position: .before(state))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// Answers 503 and closes: the whole life of a connection over the limit.
final class OverCapacityHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private var answered = false

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { refuse(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        refuse(context)
    }

    /// Whatever the client sends is dropped unread.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    private func refuse(_ context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: RawResponses.overCapacity))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 with ``ConnectionLimits`` enforced per connection and per request.
    static func guardedHTTP1(limits: ConnectionLimits, gauge: ConnectionGauge) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            GuardedHTTP1Channel(
                inner: HTTP1Channel(responder: responder, configuration: .init(idleTimeout: TimeAmount(limits.idleTimeout))),
                limits: limits, gauge: gauge
            )
        }
    }
}

/// Responses written below HTTP parsing, for connections the application never sees.
enum RawResponses {
    static let overCapacity = response(
        status: "503 Service Unavailable", extra: "Retry-After: 1\r\n",
        body: #"{"code":"UNAVAILABLE","error":"The server has too many open connections; retry shortly."}"#
    )
    static let requestTimeout = response(
        status: "408 Request Timeout", extra: "",
        body: #"{"code":"REQUEST_TIMEOUT","error":"The request did not arrive in time."}"#
    )

    private static func response(status: String, extra: String, body: String) -> [UInt8] {
        Array((
            "HTTP/1.1 \(status)\r\nContent-Type: application/json; charset=utf-8\r\nCache-Control: no-store\r\n"
            + extra + "Connection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
        ).utf8)
    }
}
