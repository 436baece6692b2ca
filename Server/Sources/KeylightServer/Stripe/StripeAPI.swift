import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A Checkout Session as Stripe answers it.
struct StripeCheckoutSession: Decodable, Sendable, Equatable {
    var id: String
    var url: String
}

/// Why a Stripe call failed.
struct StripeAPIError: Error, Sendable, Equatable {
    /// Stripe's HTTP status; nil when Stripe could not be reached.
    var status: Int?
    /// Stripe's `error.message`, or what went wrong on the way.
    var message: String
}

/// The part of Stripe's REST API that Keylight calls.
protocol StripeAPI: Sendable {
    func createCheckoutSession(secretKey: String, form: [(String, String)], idempotencyKey: String) async throws(StripeAPIError) -> StripeCheckoutSession
}

/// Stripe over HTTP: form-encoded requests, the tenant's secret key as the bearer, an
/// `Idempotency-Key` so a retried request creates one session. `baseURL` is
/// `https://api.stripe.com` in production and a local fake in tests.
struct StripeHTTPAPI: StripeAPI {
    let client: HTTPClient
    let baseURL: String
    var timeout: Duration = .seconds(20)

    func createCheckoutSession(secretKey: String, form: [(String, String)], idempotencyKey: String) async throws(StripeAPIError) -> StripeCheckoutSession {
        let body = FormEncoding.encode(form)
        // One retry on a network failure or a 5xx, with the same idempotency key: Stripe
        // answers a replay with the first result instead of creating a second session.
        var lastError = StripeAPIError(status: nil, message: "Stripe could not be reached.")
        for _ in 0..<2 {
            do {
                var request = HTTPClientRequest(url: baseURL + "/v1/checkout/sessions")
                request.method = .POST
                request.headers.add(name: "Authorization", value: "Bearer \(secretKey)")
                request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
                request.headers.add(name: "Idempotency-Key", value: idempotencyKey)
                request.body = .bytes(ByteBuffer(string: body))
                let response = try await client.execute(request, deadline: .now() + .nanoseconds(Int64(timeout / .nanoseconds(1))))
                let bytes = try await response.body.collect(upTo: 1 << 20)
                let status = Int(response.status.code)
                if (200..<300).contains(status) {
                    guard let session = try? JSONDecoder().decode(StripeCheckoutSession.self, from: Data(buffer: bytes)) else {
                        throw StripeAPIError(status: status, message: "Stripe's answer was not a Checkout Session.")
                    }
                    return session
                }
                let message = (try? JSONDecoder().decode(StripeErrorBody.self, from: Data(buffer: bytes)))?.error.message ?? "HTTP \(status)"
                lastError = StripeAPIError(status: status, message: message)
                if status < 500 { throw lastError }
            } catch let error as StripeAPIError {
                throw error
            } catch {
                lastError = StripeAPIError(status: nil, message: "Stripe could not be reached.")
            }
        }
        throw lastError
    }
}

private struct StripeErrorBody: Decodable {
    struct Detail: Decodable { var message: String? }
    var error: Detail
}

/// `application/x-www-form-urlencoded`, as Stripe reads it (`metadata[product_id]=…`).
enum FormEncoding {
    private static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)

    static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { escape($0.0) + "=" + escape($0.1) }.joined(separator: "&")
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if unreserved.contains(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    /// The pairs of a form body (for tests and the fake Stripe they run against).
    static func decode(_ body: String) -> [(String, String)] {
        body.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
    }
}

private extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
