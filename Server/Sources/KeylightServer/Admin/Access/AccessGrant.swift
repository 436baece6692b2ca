/// Permissions over a scope: one tenant (or every tenant), optionally one product of it. A user
/// has one per membership; a token has one.
public struct AccessGrant: Sendable, Hashable {
    /// nil: every tenant (and every tenant made later).
    public var tenantId: String?
    /// nil: every product of the tenant.
    public var productId: String?
    public var permissions: Set<Permission>
    /// The role the permissions come from, when they come from one.
    public var role: Role?

    public init(tenantId: String?, productId: String? = nil, permissions: Set<Permission>, role: Role? = nil) {
        self.tenantId = tenantId
        self.productId = productId
        self.permissions = permissions
        self.role = role
    }

    public init(tenantId: String?, productId: String? = nil, role: Role) {
        self.init(tenantId: tenantId, productId: productId, permissions: role.permissions, role: role)
    }

    /// Whether the grant reaches the tenant at all (for a product-scoped grant: some of it).
    func reaches(tenant: String) -> Bool { tenantId == nil || tenantId == tenant }

    /// Whether the grant covers the scope whole: `productId` nil means the whole tenant (or, with
    /// `tenant` nil, the whole server).
    func covers(tenant: String?, product: String?) -> Bool {
        guard tenantId == nil || (tenant != nil && tenantId == tenant) else { return false }
        return productId == nil || (product != nil && productId == product)
    }
}

/// Who is acting, and what they may do: the audit log's actor and the grants it holds.
public struct Principal: Sendable {
    public var actor: AuditActor
    public var grants: [AccessGrant]
    /// When the principal's own rights end (a token's expiry): what it hands out ends by then.
    public var expiresAt: Int64?

    public init(actor: AuditActor, grants: [AccessGrant], expiresAt: Int64? = nil) {
        self.actor = actor
        self.grants = grants
        self.expiresAt = expiresAt
    }

    /// The server's owner: the bootstrap token, the `keylight` CLI on the server's machine.
    static func owner(_ actor: AuditActor) -> Principal {
        Principal(actor: actor, grants: [AccessGrant(tenantId: nil, role: .owner)])
    }

    /// What the check found: allowed; visible but not allowed (403); or out of sight (404, which
    /// does not tell that the tenant or product exists).
    enum Decision: Equatable {
        case allowed, forbidden, hidden
    }

    /// May the principal do `permission` on the tenant (and product)? nil tenant: a server-wide
    /// route (its lists are filtered by ``tenants(with:)``), unless the permission is
    /// ``Permission/isServerWide``, which only a grant over every tenant holds.
    func decide(_ permission: Permission, tenantId: String?, productId: String?) -> Decision {
        guard let tenantId else {
            if permission.isServerWide {
                return grants.contains { $0.covers(tenant: nil, product: nil) && $0.permissions.contains(permission) } ? .allowed : .forbidden
            }
            return grants.contains { $0.permissions.contains(permission) } ? .allowed : .forbidden
        }
        let reaching = grants.filter { $0.reaches(tenant: tenantId) }
        guard !reaching.isEmpty else { return .hidden }
        if let productId, !reaching.contains(where: { $0.productId == nil || $0.productId == productId }) { return .hidden }
        return reaching.contains { $0.covers(tenant: tenantId, product: productId) && $0.permissions.contains(permission) } ? .allowed : .forbidden
    }

    /// Whether the principal holds `permission` over all of the scope.
    func holds(_ permission: Permission, tenantId: String?, productId: String? = nil) -> Bool {
        grants.contains { $0.covers(tenant: tenantId, product: productId) && $0.permissions.contains(permission) }
    }

    /// The tenants a server-wide list shows for `permission`: every tenant, or these.
    /// A grant over one product does not count: a tenant's lists (its audit log, its tokens) are
    /// more than one product.
    func tenants(with permission: Permission) -> TenantFilter {
        let whole = grants.filter { $0.productId == nil && $0.permissions.contains(permission) }
        if whole.contains(where: { $0.tenantId == nil }) { return .all }
        return .only(Set(whole.compactMap(\.tenantId)))
    }

    /// Whether the principal may hand out `grant`: every permission in it, over all of its scope.
    /// No one grants more than they hold.
    func mayGrant(_ grant: AccessGrant) -> Bool {
        grant.permissions.allSatisfy { holds($0, tenantId: grant.tenantId, productId: grant.productId) }
    }

    /// Whether the principal owns every tenant (server-wide lists and actions).
    var ownsServer: Bool { grants.contains { $0.covers(tenant: nil, product: nil) && $0.role == .owner } }
}

/// Which tenants a list shows.
public enum TenantFilter: Sendable, Equatable {
    case all
    case only(Set<String>)

    func contains(_ tenantId: String?) -> Bool {
        switch self {
        case .all: true
        case .only(let ids): tenantId.map(ids.contains) ?? false
        }
    }
}
