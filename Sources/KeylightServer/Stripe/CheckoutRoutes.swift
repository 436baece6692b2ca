import Foundation
import Hummingbird
import HTTPTypes

/// `POST /api/{tenantId}/checkout` (bearer: the tenant's checkout API key) → `{"url","session_id"}`.
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
    }
}
