import Foundation
import KeylightCore

/// The one place permissions are checked: the admin API's router and the dashboard's signed-in
/// routes both ask here before a handler runs, so the two cannot disagree.
extension AdminService {
    /// Refuses what the principal may not do: 404 when the tenant (or product) is out of its
    /// sight, so a refusal does not tell that it exists; 403 `FORBIDDEN` when it is in sight but
    /// the permission is not held there.
    func authorize(_ principal: Principal, _ permission: Permission, tenantId: String?, productId: String?) throws(APIError) {
        switch principal.decide(permission, tenantId: tenantId, productId: productId) {
        case .allowed: return
        case .hidden:
            let reachesTenant = tenantId.map { tenant in principal.grants.contains { $0.reaches(tenant: tenant) } } ?? false
            throw .notFound(reachesTenant ? "Product" : "Tenant")
        case .forbidden: throw .forbidden(permission)
        }
    }

    /// The principal a bearer token stands for: the owner's bootstrap token, or a live named
    /// token (its use recorded). nil: no such token, revoked or expired. Read from the database
    /// on every request, so a revocation holds at once on every process.
    func principal(bearer token: String, address: String?, userAgent: String?) async throws -> Principal? {
        if try await isOwnerToken(token) {
            return .owner(AuditActor.adminToken.from(address: address, userAgent: userAgent))
        }
        guard AdminToken.isWellFormed(token), let record = try await database.apiToken(hash: AdminToken.hash(token)),
              record.isLive(at: clock.unixSeconds) else { return nil }
        let now = clock.unixSeconds
        if record.lastUsedAt.map({ now - $0 >= 60 }) ?? true || record.lastUsedAddress != address {
            try await database.touchApiToken(id: record.id, now: now, address: address)
        }
        return Principal(actor: record.actor.from(address: address, userAgent: userAgent), grants: [record.grant], expiresAt: record.expiresAt)
    }

    /// A dashboard user's principal: their memberships.
    func principal(user: DashboardUser, address: String?, userAgent: String?) async throws -> Principal {
        Principal(
            actor: AuditActor(name: "user:\(user.email)", kind: .user, id: user.id, address: address, userAgent: userAgent),
            grants: try await database.memberships(userId: user.id).compactMap(\.grant)
        )
    }

    /// Tenants the principal sees in server-wide lists.
    func visibleTenants(_ principal: Principal, _ permission: Permission = .tenantsRead) async throws -> [Tenant] {
        let filter = principal.tenants(with: permission)
        return try await tenants().filter { filter.contains($0.id) }
    }
}

extension APIError {
    /// The principal may see the resource but not do this to it.
    static func forbidden(_ permission: Permission) -> Self {
        Self(status: .forbidden, code: "FORBIDDEN", message: "This needs the \(permission.rawValue) permission, which your role or token does not hold here.")
    }

    /// A grant beyond the granter's own.
    static let grantBeyondOwn = Self(
        status: .forbidden, code: "GRANT_EXCEEDS_OWN",
        message: "You can give only permissions you hold yourself, over a scope you hold them in."
    )
}
