import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// Sends one webhook request; answers the receiver's status code. Throws on network errors.
protocol WebhookTransport: Sendable {
    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async throws -> Int
}

/// The production transport: async-http-client, redirects not followed (a redirect is an
/// answer the receiver must fix, and following it would send signed events elsewhere).
struct HTTPClientWebhookTransport: WebhookTransport {
    let client: HTTPClient

    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await client.execute(request, deadline: .now() + .nanoseconds(Int64(timeout / .nanoseconds(1))))
        // Read (and drop) a bounded amount so the connection can be reused.
        _ = try? await response.body.collect(upTo: 64 * 1024)
        return Int(response.status.code)
    }
}
