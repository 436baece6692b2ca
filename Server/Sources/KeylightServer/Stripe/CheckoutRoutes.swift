import Foundation
import Hummingbird
import HTTPTypes

/// `POST /api/{tenantId}/checkout` (bearer: the tenant's checkout API key) → `{"url","session_id"}`,
/// and `GET /api/{tenantId}/checkout/{sessionId}/license`, the buyer's one pick-up of the key.
struct CheckoutRoutes {
    let service: CheckoutService
    let limits: ServerLimits

    func register(on router: some RouterMethods<KeylightRequestContext>) {
        router.post("/api/:tenant/checkout") { request, context in
            let tenantId = context.parameters.get("tenant") ?? ""
            try await service.authorize(tenantId: tenantId, bearer: request.headers[.authorization].flatMap(bearerToken))
            var request = request
            let bytes = try await request.collectJSONBody(limit: limits.maxBodyBytes)
            let body = try decodeBody(CheckoutRequest.self, from: bytes.readableBytesView)
            let session = try await service.createSession(tenantId: tenantId, body, idempotencyKey: request.headers[.init("Idempotency-Key")!])
            return try JSONBody.response(["url": session.url, "session_id": session.id])
        }
        // HEAD would otherwise run the GET handler and spend the one pick-up on an answer
        // without a body.
        router.head("/api/:tenant/checkout/:session/license") { _, _ -> Response in
            var response = APIError.methodNotAllowed.jsonResponse(outcomeField: nil)
            response.headers[.allow] = "GET"
            return response
        }
        // No credentials: the session id, which Stripe hands only to the browser it redirects to
        // the success page, is the capability; it works once, within 24 hours of the payment.
        router.get("/api/:tenant/checkout/:session/license") { request, context in
            let tenantId = context.parameters.get("tenant") ?? ""
            let sessionId = context.parameters.get("session") ?? ""
            let pickup = try await service.pickUp(tenantId: tenantId, sessionId: sessionId)
            var response: Response
            let origin: String?
            switch pickup {
            case .unknown:
                throw APIError.notFound("Checkout session")
            case .license(let key, let license, let allowed):
                origin = allowed
                response = try JSONBody.response(PickedUpLicense(
                    license_key: key,
                    license_id: license.id, product_id: license.productId, key_type_id: license.keyTypeId,
                    expires_at: license.expiresAt, customer_email: license.customerEmail
                ))
            case .pending(let paymentStatus, let allowed):
                origin = allowed
                response = try JSONBody.response(["status": paymentStatus == "unpaid" ? "awaiting_payment" : "pending"], status: .accepted)
                response.headers[.retryAfter] = "2"
            case .paymentFailed(let allowed):
                origin = allowed
                response = APIError.paymentFailed.jsonResponse(outcomeField: nil)
            case .gone(let allowed):
                origin = allowed
                response = APIError.licenseAlreadyPickedUp.jsonResponse(outcomeField: nil)
            }
            // The success page may live on the developer's own site: its origin (recorded from
            // the session's success_url) may read the answer.
            if let origin, request.headers[.origin] == origin {
                response.headers[.accessControlAllowOrigin] = origin
            }
            response.headers[.vary] = "Origin"
            response.headers[.init("Referrer-Policy")!] = "no-referrer"
            return response
        }
    }
}

/// The pick-up answer: the raw key, once.
struct PickedUpLicense: Encodable {
    var license_key: String
    var license_id: String
    var product_id: String
    var key_type_id: String
    @ExplicitNull var expires_at: Int64?
    @ExplicitNull var customer_email: String?
}
