import Foundation
import KeylightCore

/// Named admin API tokens: scoped to a tenant (or every tenant) and optionally one product,
/// with a permission list or a role, and an expiry. The secret is shown once.
extension AdminService {
    func createToken(_ body: CreateTokenRequest, by principal: Principal) async throws -> (ApiTokenRecord, token: String) {
        let name = try Field.required(body.name, "name", max: 100)
        guard let tenantField = body.tenant_id else {
            throw APIError.invalidRequest("Missing field tenant_id (a tenant's id, or null for every tenant).")
        }
        let tenantId = try tenantField.map { id throws(APIError) in try requireTenantId(id) }
        if let tenantId {
            try authorize(principal, .tokensManage, tenantId: tenantId, productId: nil)
            _ = try await requireTenant(tenantId)
        } else if !principal.ownsServer {
            throw APIError(status: .forbidden, code: "FORBIDDEN", message: "Only an owner of every tenant can make a token for every tenant.")
        }
        var productId: String?
        if let product = body.product_id {
            guard let tenantId else { throw APIError.invalidRequest("product_id needs a tenant_id.") }
            productId = try await requireProduct(tenantId: tenantId, productId: product).id
        }
        let grant: AccessGrant
        switch (body.role, body.permissions) {
        case (let role?, nil):
            grant = AccessGrant(tenantId: tenantId, productId: productId, role: try Role.parse(role))
        case (nil, let names?):
            let permissions = try Permission.parse(names)
            guard !permissions.isEmpty else { throw APIError.invalidRequest("permissions is empty: name at least one.") }
            grant = AccessGrant(tenantId: tenantId, productId: productId, permissions: permissions)
        default:
            throw APIError.invalidRequest("Send either role or permissions.")
        }
        if tenantId != nil || productId != nil, let serverWide = grant.permissions.sorted().first(where: \.isServerWide), body.role == nil {
            throw APIError.invalidRequest("\(serverWide.rawValue) acts on every tenant: it needs tenant_id null.")
        }
        guard principal.mayGrant(grant) else { throw APIError.grantBeyondOwn }
        let now = clock.unixSeconds
        if let expiresAt = body.expires_at, expiresAt <= now { throw APIError.invalidRequest("expires_at is in the past.") }
        // A token made by an expiring token expires with it at the latest.
        if let limit = principal.expiresAt, (body.expires_at ?? .max) > limit {
            throw APIError.invalidRequest("This token expires at \(limit): a token it makes must set expires_at no later.")
        }
        let token = AdminToken.generate()
        let record = ApiTokenRecord(
            id: "tok_" + RandomUUID.compactLowercaseString().prefix(20),
            name: name, tenantId: tenantId, productId: productId,
            permissions: body.role == nil ? grant.permissions.sorted().map(\.rawValue).joined(separator: ",") : nil,
            role: grant.role?.rawValue, createdBy: principal.actor.name, createdById: principal.actor.id, createdAt: now, expiresAt: body.expires_at
        )
        try await database.insertApiToken(record, hash: AdminToken.hash(token), actor: principal.actor)
        return (record, token)
    }

    /// The tokens of the tenants where the principal manages tokens.
    func tokens(visibleTo principal: Principal, tenantId: String?) async throws -> [ApiTokenRecord] {
        if let tenantId { try authorize(principal, .tokensManage, tenantId: tenantId, productId: nil) }
        return try await database.apiTokens(principal.tenants(with: .tokensManage), tenantId: tenantId)
    }

    /// Revokes a token the principal may manage; one out of its sight is 404.
    func revokeToken(id: String, by principal: Principal) async throws {
        guard id.utf8.count <= 64, let record = try await database.apiToken(id: id) else { throw APIError.notFound("Token") }
        if let tenantId = record.tenantId {
            guard principal.decide(.tokensManage, tenantId: tenantId, productId: nil) != .hidden else { throw APIError.notFound("Token") }
            try authorize(principal, .tokensManage, tenantId: tenantId, productId: nil)
        } else if !principal.holds(.tokensManage, tenantId: nil) {
            throw APIError.notFound("Token")
        }
        _ = try await database.revokeApiToken(id: id, now: clock.unixSeconds, actor: principal.actor)
    }

    private func requireTenantId(_ id: String) throws(APIError) -> String {
        guard TenantPath.isValidId(id) else { throw .notFound("Tenant") }
        return id
    }
}
