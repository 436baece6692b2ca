/// A product's charts (license statuses, activations and validations per day for 30 days),
/// as inline SVG for the overview and the product page.
struct ProductCharts: Sendable {
    var status: String
    var activations: String
    var validations: String
    var total: Int

    static func load(_ admin: AdminService, tenantId: String, productId: String, now: Int64) async throws -> ProductCharts {
        let counts = try await admin.licenseStatusCounts(tenantId: tenantId, productId: productId, now: now)
        let usage = try await admin.usage(tenantId: tenantId, productId: productId, lastDay: now.flooringDivided(by: 86_400), days: 30)
        let labels = usage.map { DashboardFormat.shortDay($0.day) }
        return ProductCharts(
            status: SVGChart.statuses(counts),
            activations: SVGChart.bars(title: "Activations per day", values: usage.map(\.count.activations), labels: labels, cssClass: "activations"),
            validations: SVGChart.bars(title: "Validations per day", values: usage.map(\.count.validations), labels: labels, cssClass: "validations"),
            total: counts.total
        )
    }
}
