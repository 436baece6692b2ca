import Foundation
import Hummingbird

/// A posted portal form, URL-encoded or `multipart/form-data` (the file inputs), read once with
/// a size bound into field name → value.
struct PortalForm: Sendable {
    private(set) var fields: [String: String] = [:]

    subscript(name: String) -> String? { fields[name] }

    /// A POST's form, after the steps every portal and account POST takes first: the per-address
    /// limit, then the bounded form, then the CSRF token of the visitor's session (`accepts`;
    /// `expired` is thrown without a session or with another token).
    static func readPost(
        _ request: Request, client: IPAddress, limiter: RateLimiter<IPAddress>, accepts: ((String?) -> Bool)?, expired: any Error
    ) async throws -> PortalForm {
        if case .limited(let retryAfter) = limiter.acquire(client) {
            throw APIError(status: .tooManyRequests, code: "RATE_LIMITED", message: "Too many requests from your address; wait a minute and try again.", retryAfter: retryAfter)
        }
        var request = request
        let form = try await read(&request, limit: PortalRoutes.maxFormBytes)
        guard let accepts, accepts(form["_csrf"]) else { throw expired }
        return form
    }

    static func read(_ request: inout Request, limit: Int) async throws -> PortalForm {
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: limit)
        } catch {
            throw APIError(status: .contentTooLarge, code: "PAYLOAD_TOO_LARGE", message: "The form is larger than \(limit / 1024) KiB.")
        }
        let bytes = Array(body.readableBytesView)
        if let boundary = MultipartForm.boundary(contentType: request.headers[.contentType] ?? "") {
            guard let form = try? MultipartForm(body: bytes, boundary: boundary) else { throw APIError.invalidRequest("The form could not be read.") }
            return PortalForm(fields: form.fields)
        }
        return PortalForm(fields: urlEncoded(String(decoding: bytes, as: UTF8.self)))
    }

    /// `a=1&b=2`, `+` as space, percent-escapes decoded; the first value of a repeated name wins.
    static func urlEncoded(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String? { String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            guard let name = decode(parts[0]), !name.isEmpty, fields[name] == nil else { continue }
            fields[name] = parts.count > 1 ? decode(parts[1]) ?? "" : ""
        }
        return fields
    }
}
