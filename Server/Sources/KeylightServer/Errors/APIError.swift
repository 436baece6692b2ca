import Foundation
import HTTPTypes

/// An error the API answers with: a status, a stable code and a human sentence, rendered as
/// `{"error":"<sentence>","code":"<CODE>"}` (protocol section 2).
public struct APIError: Error, Sendable, Hashable, CustomStringConvertible {
    public var status: HTTPResponse.Status
    public var code: String
    public var message: String
    /// Seconds, for `Retry-After` on 429 and 503.
    public var retryAfter: Int?
    /// A JSON object whose members are added to the error body (the 409 of a full license lists
    /// the devices holding its slots).
    var extraFields: [UInt8]?

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
    /// A body field the endpoint does not define (a misspelling, usually): named in the message
    /// and in a `field` member.
    public static func unknownField(_ path: String) -> Self {
        var error = Self(status: .badRequest, code: "UNKNOWN_FIELD", message: "Unknown field \(path): this endpoint does not take it (check its spelling).")
        error.extraFields = Array((try? JSONSerialization.data(withJSONObject: ["field": path])) ?? Data())
        return error
    }
    /// An `Idempotency-Key` used before with another request.
    public static let idempotencyMismatch = Self(
        status: .unprocessableContent, code: "IDEMPOTENCY_MISMATCH",
        message: "This Idempotency-Key was used with a different request (method, path or body); use a new key for a new request."
    )
    /// An `Idempotency-Key` whose first request is still running.
    public static let idempotencyInProgress = Self(
        status: .conflict, code: "IDEMPOTENCY_IN_PROGRESS",
        message: "A request with this Idempotency-Key is still being processed; retry shortly.", retryAfter: 1
    )
    /// `send_email` or a resend on a server started without `--smtp-url`.
    public static let mailNotConfigured = Self(status: .unprocessableContent, code: "MAIL_NOT_CONFIGURED", message: "This server sends no mail: start it with --smtp-url and --mail-from.")
    /// Reminder mails to buyers on a server started without `--public-url`: every reminder mail
    /// carries an opt-out link, which needs the server's public address.
    public static let publicURLNotSet = Self(
        status: .unprocessableContent, code: "PUBLIC_URL_NOT_SET", message: "Reminder mails carry an opt-out link: start the server with --public-url."
    )
    /// The SDK's `lost-key` on a server started without mail (protocol 6.9: it is there whenever
    /// mail is configured). The app may show the sentence to its user, so it names no server option.
    static let lostKeyNeedsMail = Self(
        status: .unprocessableContent, code: "MAIL_NOT_CONFIGURED", message: "This shop does not send mail from here. Contact the seller for your key."
    )
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
    /// A deactivation proof not signed by the key the instance was activated with (protocol 6.4).
    public static let invalidProof = Self(
        status: .unprocessableContent, code: "INVALID_PROOF",
        message: "The deactivation proof is not signed by the device this instance was activated on."
    )
    /// Freeing a device activated offline with the key alone (protocol 6.4: its deactivation proof frees it).
    /// A floating license's seat is held by validating, which a device without a network cannot do.
    public static let offlineNotAllowed = Self(
        status: .unprocessableContent, code: "OFFLINE_NOT_ALLOWED",
        message: "This license's seats float: they are held only while the app is online, so it cannot be activated offline."
    )
    public static let offlineDeviceNeedsProof = Self(
        status: .unprocessableContent, code: "INVALID_PROOF",
        message: "This device was activated offline: free it with the deactivation proof it shows when it gives the license up."
    )
    public static func rateLimited(retryAfter: Int) -> Self {
        Self(status: .tooManyRequests, code: "RATE_LIMITED", message: "Too many requests; retry later.", retryAfter: retryAfter)
    }
    public static func conflict(_ message: String) -> Self {
        Self(status: .conflict, code: "CONFLICT", message: message)
    }
    /// A Stripe event names a product or key type the tenant lacks: answered non-2xx so Stripe
    /// sends it again, and kept so it can be applied from the dashboard once Stripe stops.
    public static let unknownProduct = Self(
        status: .unprocessableContent, code: "UNKNOWN_PRODUCT",
        message: "The event's metadata names a product or key type this tenant does not have; it is kept and applies when it is sent again."
    )
    /// A Checkout Session's delayed payment failed: no license.
    public static let paymentFailed = Self(status: .init(code: 402, reasonPhrase: "Payment Required"), code: "PAYMENT_FAILED", message: "The payment for this checkout failed; no license was issued.")
    /// The key of a Checkout Session is shown once, within 24 hours of the payment.
    public static let licenseAlreadyPickedUp = Self(
        status: .gone, code: "GONE",
        message: "This license key was already shown, or more than 24 hours have passed; ask the seller for it."
    )
    public static let internalError = Self(status: .internalServerError, code: "INTERNAL", message: "Internal server error.")
    public static let unavailable = Self(status: .serviceUnavailable, code: "UNAVAILABLE", message: "The database is unavailable; retry shortly.", retryAfter: 1)
    public static let methodNotAllowed = Self(status: .methodNotAllowed, code: "METHOD_NOT_ALLOWED", message: "Method not allowed.")
}
