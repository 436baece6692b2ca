import Foundation
import Hummingbird
import HTTPTypes
import NIOCore

extension APIError: HTTPResponseError {
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        jsonResponse(outcomeField: nil)
    }

    /// `{"error","code"}`, plus `"<outcomeField>":false` for the SDK actions that report one
    /// (`activated` for activate, `valid` for validate), plus `Retry-After` when set.
    func jsonResponse(outcomeField: String?) -> Response {
        var object: [String: Any] = ["error": message, "code": code]
        if let outcomeField { object[outcomeField] = false }
        if let extraFields, let extra = (try? JSONSerialization.jsonObject(with: Data(extraFields))) as? [String: Any] {
            for (name, value) in extra where object[name] == nil { object[name] = value }
        }
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}

/// JSON response helper shared by every route.
enum JSONBody {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }()

    static func response(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let bytes = try encoder.encode(value)
        return raw(Array(bytes), status: status)
    }

    static func raw(_ bytes: [UInt8], status: HTTPResponse.Status = .ok, contentType: String = "application/json; charset=utf-8") -> Response {
        Response(
            status: status,
            headers: [.contentType: contentType, .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes))
        )
    }
}
