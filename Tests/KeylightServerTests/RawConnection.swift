import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A bare TCP connection to a live test server, for what HTTP clients will not do: send half a
/// request, stall, hold a connection open.
struct RawConnection: Sendable {
    let channel: any Channel
    private let received: NIOLockedValueBox<String>

    static func open(port: Int) async throws -> RawConnection {
        let received = NIOLockedValueBox("")
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Collector(received: received)) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawConnection(channel: channel, received: received)
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

    func close() {
        channel.close(promise: nil)
    }

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let received: NIOLockedValueBox<String>
        init(received: NIOLockedValueBox<String>) { self.received = received }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            received.withLockedValue { $0 += String(buffer: buffer) }
        }
    }
}
