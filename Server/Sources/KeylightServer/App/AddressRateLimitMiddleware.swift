import Hummingbird
import KeylightCore

/// Per-client-address rate limit, answering 429 with `Retry-After`.
struct AddressRateLimitMiddleware: RouterMiddleware {
    typealias Context = KeylightRequestContext
    let limiter: RateLimiter<IPAddress>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if case .limited(let retryAfter) = limiter.acquire(context.rateLimitKey) {
            throw APIError.rateLimited(retryAfter: retryAfter)
        }
        return try await next(request, context)
    }
}
