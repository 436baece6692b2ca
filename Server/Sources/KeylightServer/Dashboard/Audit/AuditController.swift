import Foundation
import Hummingbird

/// The audit log, newest first, 50 entries a page.
struct AuditController: Sendable {
    let dashboard: DashboardRoutes
    var pages: DashboardPages { dashboard.pages }
    static let pageSize = 50

    func register(on group: RouterGroup<DashboardContext>) {
        group.signedIn("/audit", dashboard: dashboard).get { request, context -> Response in
            let before = try request.uri.queryParameters.get("cursor").flatMap { $0.isEmpty ? nil : $0 }.map { text -> Int64 in
                guard let value = Int64(text) else { throw APIError.invalidRequest("That page link is not one this server made.") }
                return value
            }
            let entries = try await dashboard.admin.auditLog(limit: Self.pageSize + 1, beforeId: before)
            let page = entries.prefix(Self.pageSize)
            return pages.page("audit", AuditView(
                chrome: pages.chrome("Audit log", context, section: .audit),
                entries: page.map(AuditRow.init),
                nextURL: entries.count > Self.pageSize ? page.last.map { "/dashboard/audit?cursor=\($0.id)" } : nil
            ))
        }
    }
}
