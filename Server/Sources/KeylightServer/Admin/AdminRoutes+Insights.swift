import Hummingbird

/// A product's insights, as JSON and as CSV.
extension AdminRoutes {
    /// The product and the checked insights query of an insights request.
    private func insightsQuery(_ request: Request, _ context: KeylightRequestContext, extra: Set<String>) async throws -> (Product, InsightsQuery) {
        let product = try await service.requireProduct(tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"))
        return (product, try InsightsQuery(request: request, today: service.insights.today, extra: extra))
    }

    /// The insights report and its CSV tables.
    func registerInsights(on admin: AdminRouter) {
        admin.get("/tenants/:tenant/products/:product/insights", .insightsRead) { request, context in
            let (product, query) = try await insightsQuery(request, context, extra: [])
            return try JSONBody.response(InsightsBody(try await service.insights.report(tenantId: product.tenantId, productId: product.id, query: query)))
        }
        admin.get("/tenants/:tenant/products/:product/insights.csv", .insightsRead) { request, context in
            let table = try InsightsCSV(query: request.uri.queryParameters.get("table"))
            let (product, query) = try await insightsQuery(request, context, extra: ["table"])
            return table.response(try await service.insights.report(tenantId: product.tenantId, productId: product.id, query: query), tenantId: product.tenantId, productId: product.id)
        }
    }
}
