import Foundation
import Hummingbird
import HTTPTypes
import KeylightCore
import Logging
import NIOCore

/// Outermost middleware: assigns the request id, turns every error into the documented JSON,
/// and records the request in metrics and (at debug level) in the log. No secret is logged:
/// neither bodies nor the SDK key, admin token or cookies. The SDK routes render their own
/// errors and sign their answers (``SDKResponseMiddleware``).
struct RequestObservationMiddleware: RouterMiddleware {
    typealias Context = KeylightRequestContext
    let metrics: ServerMetrics
    /// Peers whose `X-Forwarded-For` names the client.
    var trustedProxies: TrustedProxies = .none

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if !trustedProxies.isEmpty {
            context.client = trustedProxies.client(peer: context.client, forwardedFor: request.headers[values: .xForwardedFor])
        }
        context.requestId = Self.requestId(from: request)
        context.logger[metadataKey: "request_id"] = .string(context.requestId)
        let start = ContinuousClock.now
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            response = Self.errorResponse(error, context: context, outcomeField: nil)
        }
        response.headers[.keylightRequestId] = context.requestId
        let duration = ContinuousClock.now - start
        let route = context.endpointPath ?? "unmatched"
        metrics.recordRequest(route: route, method: request.method.rawValue, status: response.status.code, duration: duration)
        context.logger.debug("request", metadata: [
            "method": .string(request.method.rawValue), "route": .string(route),
            "status": .stringConvertible(response.status.code),
            "duration_ms": .string(String(format: "%.3f", Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1000)),
        ])
        return response
    }

    /// Any error as the documented JSON. `outcomeField` is added as `false` (protocol: activate
    /// errors carry `"activated":false`, validate errors `"valid":false`).
    static func errorResponse(_ error: any Error, context: Context, outcomeField: String?) -> Response {
        apiError(for: error, context: context).jsonResponse(outcomeField: outcomeField)
    }

    private static func apiError(for error: any Error, context: Context) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case is NIOTooManyBytesError:
            return .payloadTooLarge
        case let error as HTTPError:
            switch error.status {
            case .notFound: return .notFound("Route")
            case .contentTooLarge: return .payloadTooLarge
            case .methodNotAllowed: return .methodNotAllowed
            default:
                let status = error.status
                return APIError(status: status, code: status.code < 500 ? "INVALID_REQUEST" : "INTERNAL", message: error.body ?? status.reasonPhrase)
            }
        default:
            if StorageError.isUnavailable(error) {
                context.logger.warning("database unavailable", metadata: ["error": "\(error)"])
                return .unavailable
            }
            context.logger.error("unhandled error", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            return .internalError
        }
    }

    /// The client's id when it is a sane token (echoed as-is), else a fresh one.
    static func requestId(from request: Request) -> String {
        if let given = request.headers[.keylightRequestId], (1...128).contains(given.utf8.count),
           given.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            return given
        }
        return RandomUUID.lowercaseString()
    }
}
