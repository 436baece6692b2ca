import Hummingbird
import NIOCore

/// Every license matching the list's filters as CSV (keys masked), streamed a page at a time:
/// a product with a million licenses costs one page of memory, not the whole file.
enum LicenseCSV {
    static let pageSize = 500
    static let header = ["id", "masked_key", "status", "expired", "customer_email", "key_type_id", "expires_at", "active_instances", "created_at"]

    static func response(_ admin: AdminService, tenantId: String, productId: String, filters: LicenseQuery) async throws -> Response {
        var query = filters
        query.afterId = nil  // the export is every match, whatever page the list was on
        // The first page is read before the headers go out, so an unknown product, a bad filter
        // or an unreachable database is still an error page rather than a cut-off download.
        let first = try await admin.licensePage(tenantId: tenantId, productId: productId, query)
        let now = admin.clock.unixSeconds
        var headers = DashboardRenderer.securityHeaders
        headers[.contentType] = "text/csv; charset=utf-8"
        headers[.contentDisposition] = "attachment; filename=\"\(tenantId)-\(productId)-licenses.csv\""
        let body = ResponseBody { [query] writer in
            try await writer.write(ByteBuffer(string: DashboardFormat.csvLine(header)))
            var page = first
            while true {
                try await writer.write(ByteBuffer(string: page.0.map { line($0, now: now) }.joined()))
                guard let cursor = page.1 else { break }
                var next = query
                next.afterId = try LicenseQuery.afterId(cursor: cursor)
                page = try await admin.licensePage(tenantId: tenantId, productId: productId, next)
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    static func line(_ license: License, now: Int64) -> String {
        DashboardFormat.csvLine([
            license.id, license.maskedKey, license.status.rawValue, license.isExpired(at: now) ? "true" : "false",
            license.customerEmail ?? "", license.keyTypeId, DashboardFormat.iso(license.expiresAt), String(license.activeInstances),
            DashboardFormat.iso(license.createdAt),
        ])
    }
}
