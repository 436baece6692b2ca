import AsyncHTTPClient
import Foundation
import NIOCore

/// Why a customer lookup failed, and whether trying again may help.
struct PaddleAPIError: Error, Sendable, Equatable {
    var message: String
    /// A 404 (no such customer) or 403 will not change; a network failure, a 5xx, a 429 or a
    /// 401 (the operator may fix the key) may.
    var retryable: Bool
}

/// The part of Paddle's API Keylight calls: a customer's address.
protocol PaddleCustomerAPI: Sendable {
    func email(customerId: String, apiKey: String, environment: String?) async throws(PaddleAPIError) -> String
}

/// `GET /customers/{id}` on `https://api.paddle.com` (or `sandbox-api.paddle.com`), the API key
/// as the bearer; `baseURL` overrides both (a proxy, or a local fake in tests).
struct PaddleHTTPAPI: PaddleCustomerAPI {
    let client: HTTPClient
    var baseURL: String?
    var timeout: Duration = .seconds(10)

    static func base(environment: String?) -> String {
        environment == "sandbox" ? "https://sandbox-api.paddle.com" : "https://api.paddle.com"
    }

    func email(customerId: String, apiKey: String, environment: String?) async throws(PaddleAPIError) -> String {
        guard customerId.utf8.allSatisfy({ $0 < 0x80 && (Character(Unicode.Scalar($0)).isLetter || Character(Unicode.Scalar($0)).isNumber || $0 == UInt8(ascii: "_")) }) else {
            throw PaddleAPIError(message: "not a Paddle customer id", retryable: false)
        }
        var request = HTTPClientRequest(url: (baseURL ?? Self.base(environment: environment)) + "/customers/" + customerId)
        request.headers.add(name: "Authorization", value: "Bearer \(apiKey)")
        request.headers.add(name: "Paddle-Version", value: "1")
        let status: Int
        let bytes: ByteBuffer
        do {
            let response = try await client.execute(request, deadline: .now() + .nanoseconds(Int64(timeout / .nanoseconds(1))))
            status = Int(response.status.code)
            bytes = try await response.body.collect(upTo: 256 * 1024)
        } catch {
            throw PaddleAPIError(message: "Paddle could not be reached", retryable: true)
        }
        guard (200..<300).contains(status) else {
            throw PaddleAPIError(message: "Paddle answered HTTP \(status)", retryable: status >= 500 || status == 429 || status == 401)
        }
        guard let json = EventJSON.parse(Array(buffer: bytes)), let email = json["data"]["email"].string else {
            throw PaddleAPIError(message: "Paddle's answer names no address", retryable: false)
        }
        return email
    }
}
