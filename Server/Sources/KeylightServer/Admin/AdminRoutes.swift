import Hummingbird
import HTTPTypes

/// Turns `Authorization: Bearer <token>` into the request's ``Principal``: the owner's token, or
/// a named token that is neither revoked nor expired (read from the database on every request).
struct AdminAuthMiddleware: RouterMiddleware {
    typealias Context = KeylightRequestContext
    let service: AdminService

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization], header.utf8.count <= 512, let token = bearerToken(header),
              let principal = try await service.principal(
                  bearer: token, address: context.client.map { "\($0)" }, userAgent: request.headers[.userAgent]
              ) else { throw APIError.unauthorized }
        var context = context
        context.principal = principal
        return try await next(request, context)
    }
}

/// `/admin/v1/…` (protocol section 4), plus listing additions documented in docs/admin-api/README.md.
struct AdminRoutes {
    let service: AdminService
    let limits: ServerLimits
    let table: RouteTable
    /// Artifacts, update settings and feeds (issue 51); nil in routers built without them.
    var releases: ReleaseService? = nil

    func register(on router: some RouterMethods<KeylightRequestContext>) {
        let group = router.group("/admin/v1").add(middleware: AdminAuthMiddleware(service: service))
        let admin = AdminRouter(group: group, limits: limits, idempotency: IdempotencyKeys(database: service.database, sealer: service.sealer, clock: service.clock), service: service, table: table)

        registerCatalog(on: admin)
        registerLicenses(on: admin)
        registerInsights(on: admin)
        registerMail(on: admin)
        registerPayments(on: admin)
        registerWebhooks(on: admin)
        registerSigningKeys(on: admin)
        registerReleases(on: admin)
        registerAccess(on: admin)
    }

    /// `limit=` of a listing: 1-500, `default` when absent or empty.
    static func pageLimit(_ text: String?, default value: Int) throws(APIError) -> Int {
        guard let text, !text.isEmpty else { return value }
        guard let limit = Int(text), (1...500).contains(limit) else { throw .invalidRequest("limit must be 1-500.") }
        return limit
    }
}
