import HTTPTypes
import Hummingbird
import Logging

/// Turns a dashboard route's failures into pages. A form refused for a reason the user can
/// fix (a 4xx other than 404) goes back to the form's page with the reason as a flash; anything
/// else is an error page: 503 (with `Retry-After`, as the API answers) when the database is
/// unreachable, 500 for the unexpected.
struct DashboardErrorMiddleware: RouterMiddleware {
    typealias Context = DashboardContext
    let pages: DashboardPages
    /// The page a failed form returns to (pages that fail to load go to the overview).
    let back: @Sendable (DashboardContext) -> String
    let logger: Logger

    init(pages: DashboardPages, logger: Logger, back: @escaping @Sendable (DashboardContext) -> String = { _ in "/dashboard" }) {
        self.pages = pages
        self.logger = logger
        self.back = back
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let form = request.method == .post
            let back = form ? back(context) : "/dashboard"
            switch error {
            case let refusal as DashboardRefusal:
                return pages.errorPage(context, status: refusal.status, refusal.message, back: back)
            case let error as APIError:
                if form && error.status.code < 500 && error.status != .notFound {
                    pages.flash(context, error: error.message)
                    return .redirect(to: back)
                }
                return pages.errorPage(context, status: error.status, error.message, back: back)
            case _ where StorageError.isUnavailable(error):
                logger.warning("dashboard: database unavailable", metadata: ["error": "\(error)"])
                var response = pages.errorPage(context, status: .serviceUnavailable, "The database is unavailable; try again shortly.", back: back)
                response.headers[.retryAfter] = String(APIError.unavailable.retryAfter ?? 1)
                return response
            default:
                logger.warning("dashboard request failed", metadata: ["error": "\(error)"])
                return pages.errorPage(context, status: .internalServerError, "Something went wrong; nothing you asked for was half-done. Try again.", back: back)
            }
        }
    }
}
