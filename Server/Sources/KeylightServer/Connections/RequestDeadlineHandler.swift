import NIOCore
import NIOHTTPTypes

/// Ends requests that arrive too slowly. Sits first in the pipeline, so it sees raw bytes: the
/// clock starts at a request's first byte (a slowloris never completes its headers, so nothing
/// above the HTTP decoder would ever notice it) and stops when ``RequestProgressHandler`` reports
/// the request's end. On expiry a request whose head never arrived is answered 408; one whose
/// body stalled is closed (the application is already reading it, so no answer can be added).
final class RequestDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?
    private var headRead = false
    private var context: ChannelHandlerContext?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        start()
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    /// A request head was decoded (it may have come in the same read as the previous request's end).
    func requestHeadRead() {
        headRead = true
        start()
    }

    /// The request arrived whole: what follows is the application's time, not the client's.
    func requestEndRead() {
        stop()
    }

    private func start() {
        guard timer == nil, let context else { return }
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in expire() }
    }

    private func stop() {
        timer?.cancel()
        timer = nil
        headRead = false
    }

    private func expire() {
        timer = nil
        guard let context else { return }
        if headRead {
            context.close(promise: nil)
        } else {
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: RawResponses.requestTimeout))).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
        }
    }
}

/// Reports decoded request heads and ends to the connection's ``RequestDeadlineHandler``.
final class RequestProgressHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let deadline: RequestDeadlineHandler

    init(deadline: RequestDeadlineHandler) {
        self.deadline = deadline
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: deadline.requestHeadRead()
        case .end: deadline.requestEndRead()
        case .body: break
        }
        context.fireChannelRead(data)
    }
}
