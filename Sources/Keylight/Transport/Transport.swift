import Foundation
#if canImport(FoundationNetworking) && URLSessionTransport
import FoundationNetworking
#endif

/// One HTTP exchange with the server.
public struct TransportRequest: Sendable, Hashable {
    public var method: String
    /// Relative to the server's base URL, for example `/acme/app/validate`.
    public var path: String
    public var headers: [String: String]
    public var body: Data?

    public init(method: String, path: String, headers: [String: String] = [:], body: Data? = nil) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }
}

public struct TransportResponse: Sendable, Hashable {
    public var status: Int
    /// Header names lower-cased.
    public var headers: [String: String]
    public var body: Data

    public init(status: Int, headers: [String: String] = [:], body: Data) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
        self.body = body
    }
}

/// Sends requests to the license server. Inject one to test, or to route through your own stack.
public protocol Transport: Sendable {
    /// Throws only when no response arrived (offline, timeout, TLS failure).
    func send(_ request: TransportRequest) async throws -> TransportResponse
}

#if !canImport(FoundationNetworking) || URLSessionTransport
/// The production transport: `URLSession` with an ephemeral configuration (no cookies, no cache).
public struct URLSessionTransport: Transport {
    public let baseURL: URL
    let session: URLSession

    public init(baseURL: URL, timeout: TimeInterval = 20) {
        self.baseURL = baseURL
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        self.session = URLSession(configuration: configuration)
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let base = baseURL.absoluteString.hasSuffix("/") ? String(baseURL.absoluteString.dropLast()) : baseURL.absoluteString
        guard let url = URL(string: base + request.path) else { throw URLError(.badURL) }
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = request.method
        urlRequest.httpBody = request.body
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await session.data(for: urlRequest)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return TransportResponse(status: http.statusCode, headers: headers, body: data)
    }
}
#endif

/// The transport of a build without one (Linux with the `URLSessionTransport` trait off, as the
/// server package builds the SDK): every request fails, saying to inject a transport.
struct NoDefaultTransport: Transport {
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        throw KeylightError.configuration("this build has no default transport (the URLSessionTransport trait is off): pass one in Configuration(transport:)")
    }
}

extension Configuration {
    /// URLSession where the build has it.
    static func defaultTransport(baseURL: URL) -> any Transport {
        #if !canImport(FoundationNetworking) || URLSessionTransport
        URLSessionTransport(baseURL: baseURL)
        #else
        NoDefaultTransport()
        #endif
    }
}
