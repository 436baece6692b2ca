import HTTPTypes

/// An error the API answers with: a status, a stable code and a human sentence, rendered as
/// `{"error":"<sentence>","code":"<CODE>"}` (protocol section 2).
public struct APIError: Error, Sendable, Hashable, CustomStringConvertible {
    public var status: HTTPResponse.Status
    public var code: String
    public var message: String
    /// Seconds, for `Retry-After` on 429 and 503.
    public var retryAfter: Int?

    public init(status: HTTPResponse.Status, code: String, message: String, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    public var description: String { "\(status.code) \(code): \(message)" }

    public static func invalidRequest(_ message: String) -> Self {
        Self(status: .badRequest, code: "INVALID_REQUEST", message: message)
    }
    public static let unauthorized = Self(status: .unauthorized, code: "UNAUTHORIZED", message: "Missing or wrong credentials.")
    public static func notFound(_ what: String) -> Self {
        Self(status: .notFound, code: "NOT_FOUND", message: "\(what) not found.")
    }
    public static let activationLimitReached = Self(
        status: .conflict, code: "ACTIVATION_LIMIT_REACHED",
        message: "All activation slots of this license are in use; deactivate a device first."
    )
    public static let payloadTooLarge = Self(status: .contentTooLarge, code: "PAYLOAD_TOO_LARGE", message: "Request body is over 64 KiB.")
    public static let licenseRevoked = Self(status: .unprocessableContent, code: "LICENSE_REVOKED", message: "This license has been revoked.")
    public static let licenseSuspended = Self(status: .unprocessableContent, code: "LICENSE_SUSPENDED", message: "This license is suspended.")
    public static let licenseExpired = Self(status: .unprocessableContent, code: "LICENSE_EXPIRED", message: "This license has expired.")
    public static let instanceInactive = Self(status: .unprocessableContent, code: "INSTANCE_INACTIVE", message: "This device has been deactivated.")
    public static func rateLimited(retryAfter: Int) -> Self {
        Self(status: .tooManyRequests, code: "RATE_LIMITED", message: "Too many requests; retry later.", retryAfter: retryAfter)
    }
    public static func conflict(_ message: String) -> Self {
        Self(status: .conflict, code: "CONFLICT", message: message)
    }
    public static let internalError = Self(status: .internalServerError, code: "INTERNAL", message: "Internal server error.")
    public static let unavailable = Self(status: .serviceUnavailable, code: "UNAVAILABLE", message: "The database is unavailable; retry shortly.", retryAfter: 1)
    public static let methodNotAllowed = Self(status: .methodNotAllowed, code: "METHOD_NOT_ALLOWED", message: "Method not allowed.")
}
