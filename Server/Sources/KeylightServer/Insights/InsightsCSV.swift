import Hummingbird

/// The insights' tables as CSV: the admin API's `insights.csv` and the dashboard's exports.
/// `devices` is the default (the same rows as the JSON's `active_devices`).
enum InsightsCSV: String, CaseIterable, Sendable {
    case devices, series, funnel, quiet

    init(query: String?) throws(APIError) {
        guard let query, !query.isEmpty else { self = .devices; return }
        guard let table = InsightsCSV(rawValue: query) else {
            throw .invalidRequest("table must be one of \(Self.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        self = table
    }

    func text(_ report: InsightsReport) -> String {
        switch self {
        case .devices:
            return DashboardFormat.csvLine([report.query.by.rawValue, "devices", "licensed", "keyless"])
                + InsightsBody(report).active_devices.map { DashboardFormat.csvLine([$0.value ?? "", String($0.devices), String($0.licensed), String($0.keyless)]) }.joined()
        case .series:
            return DashboardFormat.csvLine(["day", report.query.by.rawValue, "devices_seen_in_\(report.query.windowDays)_days"])
                + InsightsBody(report).series.flatMap { day in day.devices.map { DashboardFormat.csvLine([day.day, $0.value ?? "", String($0.devices)]) } }.joined()
        case .funnel:
            return DashboardFormat.csvLine(["metric", "value"]) + report.funnelMetrics.map { DashboardFormat.csvLine([$0.key, $0.value]) }.joined()
        case .quiet:
            return DashboardFormat.csvLine(["license_id", "masked_key", "customer_email", "devices", "last_seen_at"])
                + report.quietLicenses.map {
                    DashboardFormat.csvLine([$0.licenseId, $0.maskedKey, $0.customerEmail ?? "", String($0.devices), DashboardFormat.iso($0.lastSeenAt)])
                }.joined()
        }
    }

    /// The table as a download named for the product, the table and the range.
    func response(_ report: InsightsReport, tenantId: String, productId: String) -> Response {
        var headers = DashboardRenderer.securityHeaders
        headers[.contentType] = "text/csv; charset=utf-8"
        let name = "\(tenantId)-\(productId)-insights-\(rawValue)-\(CivilDay.format(report.query.fromDay))-\(CivilDay.format(report.query.toDay)).csv"
        headers[.contentDisposition] = "attachment; filename=\"\(name)\""
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: .init(string: text(report))))
    }
}
