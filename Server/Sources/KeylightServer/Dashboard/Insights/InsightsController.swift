import Hummingbird

/// A product's insights page and its CSV exports (`/dashboard/t/{t}/p/{p}/insights`).
struct InsightsController: Sendable {
    let dashboard: DashboardRoutes
    var admin: AdminService { dashboard.admin }
    var pages: DashboardPages { dashboard.pages }

    func register(on group: RouterGroup<DashboardContext>) {
        group.signedIn("/t/:tenant/p/:product/insights", dashboard: dashboard, back: ProductsController.productPage).get(.insightsRead) { request, context -> Response in
            let (tenant, product, report) = try await load(request, context, extra: [])
            return pages.page("insights", InsightsView(chrome: pages.chrome("Insights · \(product.name)", context), tenant: tenant, product: product, report: report))
        }
        group.signedIn("/t/:tenant/p/:product/insights.csv", dashboard: dashboard, back: ProductsController.productPage).get(.insightsRead) { request, context -> Response in
            let table = try InsightsCSV(query: request.uri.queryParameters.get("table"))
            let (tenant, product, report) = try await load(request, context, extra: ["table"])
            return table.response(report, tenantId: tenant.id, productId: product.id)
        }
    }

    private func load(_ request: Request, _ context: DashboardContext, extra: Set<String>) async throws -> (Tenant, Product, InsightsReport) {
        let (tenantId, productId) = ProductsController.ids(context)
        let tenant = try await admin.requireTenant(tenantId)
        let product = try await admin.requireProduct(tenantId: tenantId, productId: productId)
        let query = try InsightsQuery(request: request, today: admin.insights.today, extra: extra)
        return (tenant, product, try await admin.insights.report(tenantId: tenant.id, productId: product.id, query: query))
    }
}
