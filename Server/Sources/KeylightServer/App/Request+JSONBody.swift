import Hummingbird
import NIOCore

extension Request {
    /// The body, at most `limit` bytes: a declared or actual larger body is a 413.
    mutating func collectJSONBody(limit: Int) async throws -> ByteBuffer {
        if let length = headers[.contentLength].flatMap(Int.init), length > limit { throw APIError.payloadTooLarge }
        do {
            return try await collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw APIError.payloadTooLarge
        }
    }
}
