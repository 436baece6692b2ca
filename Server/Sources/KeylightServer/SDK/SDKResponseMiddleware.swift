import Hummingbird
import KeylightCore

/// What every answer of the public SDK API gets, on the routes themselves (the router already
/// knows which they are): errors rendered here with the action's outcome field
/// (`"activated":false`, `"valid":false`), and, for a request that carries `X-Keylight-Nonce`,
/// the response signature (protocol section 3) over whatever the answer is, errors and 429s
/// included. The per-address limit sits inside this middleware for that reason.
struct SDKResponseMiddleware: RouterMiddleware {
    typealias Context = KeylightRequestContext
    /// nil when the server signs nothing (tests of unsigned set-ups).
    let signer: ResponseSigner?
    /// `activated` for activate, `valid` for validate, nil for the others.
    let outcomeField: String?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let signer, let header = request.headers[.keylightNonce] else {
            return await answer(request, context, next)
        }
        guard let nonce = ResponseNonce(header: header) else {
            // Nothing to sign for: answered unsigned.
            return APIError.invalidRequest("X-Keylight-Nonce must be base64 of 12 bytes.").jsonResponse(outcomeField: outcomeField)
        }
        let response = await answer(request, context, next)
        // The router matched `/:tenant/:product/…`: the tenant whose key signs is its parameter.
        return try await ResponseSigning.signed(response, nonce: nonce, tenantId: context.parameters.get("tenant") ?? "", path: request.uri.path, signer: signer)
    }

    private func answer(_ request: Request, _ context: Context, _ next: (Request, Context) async throws -> Response) async -> Response {
        do {
            return try await next(request, context)
        } catch {
            return RequestObservationMiddleware.errorResponse(error, context: context, outcomeField: outcomeField)
        }
    }
}
