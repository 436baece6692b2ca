/// `POST /admin/v1/tokens`. `tenant_id` must be sent: a tenant's id, or `null` for every tenant.
struct CreateTokenRequest: Decodable, Sendable {
    var name: String?
    var tenant_id: String??
    var product_id: String?
    var permissions: [String]?
    var role: String?
    var expires_at: Int64?

    enum CodingKeys: String, CodingKey {
        case name, tenant_id, product_id, permissions, role, expires_at
    }

    init(name: String?, tenant_id: String??, product_id: String? = nil, permissions: [String]? = nil, role: String? = nil, expires_at: Int64? = nil) {
        self.name = name
        self.tenant_id = tenant_id
        self.product_id = product_id
        self.permissions = permissions
        self.role = role
        self.expires_at = expires_at
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        tenant_id = try c.nullable(String.self, forKey: .tenant_id)
        product_id = try c.decodeIfPresent(String.self, forKey: .product_id)
        permissions = try c.decodeIfPresent([String].self, forKey: .permissions)
        role = try c.decodeIfPresent(String.self, forKey: .role)
        expires_at = try c.decodeIfPresent(Int64.self, forKey: .expires_at)
    }
}

/// A token as listed: never its secret.
struct TokenBody: Encodable {
    var id: String
    var name: String
    @ExplicitNull var tenant_id: String?
    @ExplicitNull var product_id: String?
    @ExplicitNull var role: String?
    var permissions: [String]
    @ExplicitNull var expires_at: Int64?
    @ExplicitNull var last_used_at: Int64?
    @ExplicitNull var last_used_address: String?
    @ExplicitNull var revoked_at: Int64?
    var created_at: Int64
    var created_by: String
    /// Shown once, in the answer to the POST that made it.
    var token: String?

    init(_ record: ApiTokenRecord, token: String? = nil) {
        id = record.id
        name = record.name
        tenant_id = record.tenantId
        product_id = record.productId
        role = record.role
        permissions = record.grant.permissions.sorted().map(\.rawValue)
        expires_at = record.expiresAt
        last_used_at = record.lastUsedAt
        last_used_address = record.lastUsedAddress
        revoked_at = record.revokedAt
        created_at = record.createdAt
        created_by = record.createdBy
        self.token = token
    }
}
