import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Sends one webhook request; answers the receiver's status code. Throws on network errors.
protocol WebhookTransport: Sendable {
    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async throws -> Int
}

/// A delivery the address policy refused: the endpoint's name resolves to (or is) an address
/// that is not on the public internet.
struct RefusedAddress: Error, CustomStringConvertible {
    var host: String
    var address: IPAddress
    var kind: String
    var description: String { "refused: \(host) is a \(kind) address (\(address)); only public addresses receive webhooks" }
}

/// The production transport: async-http-client, redirects not followed (a redirect is an
/// answer the receiver must fix, and following it would send signed events elsewhere).
///
/// The host is resolved here, at delivery time, every address it has is checked against the
/// policy, and the connection goes to the address that was checked (a DNS override of the
/// client), so a name cannot pass the check with one answer and connect with another. TLS still
/// verifies the certificate for the name. Each delivery has its own short-lived client, since
/// the override is the client's.
struct HTTPClientWebhookTransport: WebhookTransport {
    let eventLoopGroup: any EventLoopGroup
    let resolver: any HostResolver
    var policy: AddressPolicy

    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async throws -> Int {
        // The host exactly as async-http-client will read it (URL, not URLComponents, which
        // decodes punycode), so the name checked and the name overridden are the one it connects to.
        guard let host = URL(string: url)?.host, !host.isEmpty, host.utf8.allSatisfy({ $0 < 0x80 }) else {
            throw URLError(.badURL)
        }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let literal = IPAddress(bare)
        let addresses: [IPAddress]
        if let literal { addresses = [literal] } else { addresses = try await resolver.addresses(of: bare) }
        for address in addresses {
            if let kind = policy.refusal(address) { throw RefusedAddress(host: bare, address: address, kind: kind) }
        }
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(10), read: .seconds(30)))
        if literal == nil { configuration.dnsOverride = [bare: addresses[0].description] }
        let client = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: configuration)
        do {
            let status = try await send(client, url: url, headers: headers, body: body, timeout: timeout)
            try? await client.shutdown()
            return status
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    private func send(_ client: HTTPClient, url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        // This deadline ends with the response head; the dispatcher's covers the body too.
        let response = try await client.execute(request, deadline: .now() + .nanoseconds(Int64(timeout / .nanoseconds(1))))
        // Read (and drop) a bounded amount: the status is the answer.
        _ = try? await response.body.collect(upTo: 64 * 1024)
        return Int(response.status.code)
    }
}
