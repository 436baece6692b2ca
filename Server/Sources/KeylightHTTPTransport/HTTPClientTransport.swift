import AsyncHTTPClient
import Foundation
import Keylight
import NIOCore
import NIOHTTP1

/// The SDK's transport over AsyncHTTPClient, for the CLI's client, the end-to-end tests and the
/// benchmarks: with it nothing in the server package needs URLSession, whose Linux build
/// (FoundationNetworking) drags in libcurl and keeps the binary from linking statically.
public struct HTTPClientTransport: Transport {
    public let baseURL: URL
    let client: HTTPClient
    let timeout: TimeAmount
    /// A Keylight answer is a few kilobytes; anything past this is not one.
    static let bodyLimit = 1 << 20

    /// - Parameters:
    ///   - client: the HTTP client (the process-wide shared one by default).
    ///   - timeout: for the whole exchange, connecting included.
    public init(baseURL: URL, client: HTTPClient = .shared, timeout: TimeAmount = .seconds(20)) {
        self.baseURL = baseURL
        self.client = client
        self.timeout = timeout
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var base = baseURL.absoluteString
        if base.hasSuffix("/") { base.removeLast() }
        var http = HTTPClientRequest(url: base + request.path)
        http.method = HTTPMethod(rawValue: request.method)
        for (name, value) in request.headers { http.headers.add(name: name, value: value) }
        if let body = request.body { http.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await client.execute(http, timeout: timeout)
        let body = try await response.body.collect(upTo: Self.bodyLimit)
        var headers: [String: String] = [:]
        for (name, value) in response.headers { headers[name.lowercased()] = value }
        return TransportResponse(status: Int(response.status.code), headers: headers, body: Data(body.readableBytesView))
    }
}
