import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A bare TCP connection to a live test server, for what HTTP clients will not do: send half a
/// request, stall, hold a connection open.
struct RawConnection: Sendable {
    let channel: any Channel
    private let received: NIOLockedValueBox<String>
    private let closedAt: NIOLockedValueBox<ContinuousClock.Instant?>

    static func open(port: Int) async throws -> RawConnection {
        let received = NIOLockedValueBox("")
        let closedAt = NIOLockedValueBox<ContinuousClock.Instant?>(nil)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Collector(received: received, closedAt: closedAt)) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawConnection(channel: channel, received: received, closedAt: closedAt)
    }

    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text))
    }

    /// Everything the server sent by the time it closed the connection, or nil (and the
    /// connection closed here) when it is still open after `timeout`.
    func readUntilClosed(timeout: Duration) async throws -> String? {
        let deadline = ContinuousClock.now + timeout
        while channel.isActive, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        guard !channel.isActive else {
            close()
            return nil
        }
        try? await channel.closeFuture.get()
        return received.withLockedValue { $0 }
    }

    /// When the connection closed, as its event loop saw it. Timing checks use this rather than
    /// the time a test task wakes up to look: that task shares two threads with every other
    /// suite, so a busy run would add its waiting to the server's time.
    var closedTime: ContinuousClock.Instant? { closedAt.withLockedValue { $0 } }

    /// What the server has sent so far (for failure messages).
    var receivedSoFar: String { received.withLockedValue { $0 } }

    func close() {
        channel.close(promise: nil)
    }

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let received: NIOLockedValueBox<String>
        let closedAt: NIOLockedValueBox<ContinuousClock.Instant?>
        init(received: NIOLockedValueBox<String>, closedAt: NIOLockedValueBox<ContinuousClock.Instant?>) {
            self.received = received
            self.closedAt = closedAt
        }

        func channelInactive(context: ChannelHandlerContext) {
            closedAt.withLockedValue { $0 = $0 ?? .now }
            context.fireChannelInactive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            received.withLockedValue { $0 += String(buffer: buffer) }
        }
    }
}
