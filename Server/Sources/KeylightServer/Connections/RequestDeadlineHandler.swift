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
    /// Set while a file upload streams in: no whole-request deadline, but this long without a
    /// byte ends it.
    private var idleTimeout: TimeAmount?
    private var lastRead = NIODeadline.now()
    let uploadIdleTimeout: TimeAmount

    init(timeout: TimeAmount, uploadIdleTimeout: TimeAmount = .seconds(30)) {
        self.timeout = timeout
        self.uploadIdleTimeout = uploadIdleTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastRead = .now()
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

    /// The request being read is a file upload: from here its body may take as long as it
    /// needs, as long as bytes keep coming.
    func streamingUpload() {
        timer?.cancel()
        timer = nil
        idleTimeout = uploadIdleTimeout
        lastRead = .now()
        start()
    }

    private func start() {
        guard timer == nil, let context else { return }
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: idleTimeout ?? timeout) { [self] in expire() }
    }

    private func stop() {
        timer?.cancel()
        timer = nil
        headRead = false
        idleTimeout = nil
    }

    private func expire() {
        timer = nil
        guard let context else { return }
        // An upload that received a byte lately gets the rest of its idle time.
        if let idleTimeout, NIODeadline.now() - lastRead < idleTimeout {
            timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: lastRead + idleTimeout) { [self] in expire() }
            return
        }
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
        case .head(let head):
            deadline.requestHeadRead()
            if head.method == .put, Self.isArtifactUpload(head.path) { deadline.streamingUpload() }
        case .end: deadline.requestEndRead()
        case .body: break
        }
        context.fireChannelRead(data)
    }

    /// `/admin/v1/tenants/*/products/*/releases/*/artifacts[?…]`, the one streamed upload.
    static func isArtifactUpload(_ path: String?) -> Bool {
        guard let path else { return false }
        let segments = path.prefix { $0 != "?" }.split(separator: "/", omittingEmptySubsequences: false)
        return segments.count == 10 && segments[0].isEmpty && segments[1] == "admin" && segments[2] == "v1" && segments[3] == "tenants"
            && segments[5] == "products" && segments[7] == "releases" && segments[9] == "artifacts"
    }
}
