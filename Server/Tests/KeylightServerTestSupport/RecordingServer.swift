import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// A live HTTP server on 127.0.0.1 that records every request and answers as the test says:
/// the webhook receivers and the fake Stripe API of the tests.
public final class RecordingServer: Sendable {
    /// One request as it arrived.
    public struct Recorded: Sendable {
        public var method: String
        public var path: String
        /// Header names lower-cased.
        public var headers: [String: String]
        public var body: [UInt8]
        public var text: String { String(decoding: body, as: UTF8.self) }
        public var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
    }

    /// What to answer: a status and a body.
    public struct Answer: Sendable {
        public var status: Int
        public var body: String
        public init(_ status: Int, _ body: String = "") {
            self.status = status
            self.body = body
        }
    }

    private let state = NIOLockedValueBox<(requests: [Recorded], answers: [Answer])>(([], []))
    private let respond: @Sendable (Recorded, Int) -> Answer
    private let task = NIOLockedValueBox<Task<Void, any Error>?>(nil)
    public let port: Int

    /// Starts listening; `respond` gets each request and its 0-based index.
    public init(respond: @escaping @Sendable (Recorded, Int) -> Answer = { _, _ in Answer(200, "{}") }) async throws {
        self.respond = respond
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        let router = Router()
        let box = state
        router.on("**", method: .post) { request, _ -> Response in
            var request = request
            let body = try await request.collectBody(upTo: 4 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let recorded = Recorded(method: request.method.rawValue, path: request.uri.path, headers: headers, body: Array(body.readableBytesView))
            let index = box.withLockedValue { state -> Int in
                state.requests.append(recorded)
                return state.requests.count - 1
            }
            let answer = respond(recorded, index)
            box.withLockedValue { $0.answers.append(answer) }
            return Response(
                status: .init(code: answer.status), headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: answer.body))
            )
        }
        var logger = Logger(label: "recording-server")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        let running = Task {
            // However the server ends, the wait for its port below ends too.
            defer { continuation.finish() }
            try await app.run()
        }
        var port = 0
        for await value in stream { port = value; break }
        guard port != 0 else {
            running.cancel()
            throw StartError(reason: String(describing: await running.result))
        }
        self.port = port
        task.withLockedValue { $0 = running }
    }

    /// The server stopped before it listened.
    public struct StartError: Error, CustomStringConvertible {
        public var reason: String
        public var description: String { "the recording server did not start: \(reason)" }
    }

    public var url: String { "http://127.0.0.1:\(port)" }

    public var requests: [Recorded] { state.withLockedValue { $0.requests } }

    /// The statuses answered so far, in order.
    public var statuses: [Int] { state.withLockedValue { $0.answers.map(\.status) } }

    public func stop() async {
        let running = task.withLockedValue { $0 }
        running?.cancel()
        _ = try? await running?.value
    }
}
