import Foundation
import Hummingbird

/// The audit log, newest first, 50 entries a page, of the tenants the user may read the log of
/// (entries of no tenant only for those who see every tenant), filtered by actor, kind and action.
struct AuditController: Sendable {
    let dashboard: DashboardRoutes
    var pages: DashboardPages { dashboard.pages }
    static let pageSize = 50

    func register(on group: RouterGroup<DashboardContext>) {
        group.signedIn("/audit", dashboard: dashboard).get(.auditRead) { request, context -> Response in
            let query = request.uri.queryParameters
            let before = try query.get("cursor").flatMap { $0.isEmpty ? nil : $0 }.map { text -> Int64 in
                guard let value = Int64(text) else { throw APIError.invalidRequest("That page link is not one this server made.") }
                return value
            }
            let principal = try context.requireUser().principal
            let filter = try AuditFilter(principal: principal, reading: { query.get($0) })
            if let tenant = filter.tenantId { try dashboard.admin.authorize(principal, .auditRead, tenantId: tenant, productId: nil) }
            let entries = try await dashboard.admin.auditLog(filter, limit: Self.pageSize + 1, beforeId: before)
            let page = entries.prefix(Self.pageSize)
            let kept: [(String, String)] = ["tenant", "actor", "actor_kind", "actor_id", "action"].compactMap { name in
                query.get(name).flatMap { $0.isEmpty ? nil : (name, String($0)) }
            }
            return pages.page("audit", AuditView(
                chrome: pages.chrome("Audit log", context, section: .audit),
                entries: page.map(AuditRow.init),
                nextURL: entries.count > Self.pageSize ? page.last.map { "/dashboard/audit?" + FormEncoding.encode(kept + [("cursor", String($0.id))]) } : nil,
                actor: filter.actor, action: filter.action, tenant: filter.tenantId,
                kinds: AuditActor.Kind.allCases.map { AuditKindOption(name: $0.rawValue, selected: $0 == filter.actorKind) }
            ))
        }
    }
}
