import KeylightCore

struct TenantBody: Encodable {
    var id: String
    var name: String
}

struct ProductBody: Encodable {
    var tenant_id: String
    var id: String
    var name: String
    var key_prefix: String
    var trial_duration_days: Int
    var free_tier_enabled: Bool
    /// Present only in the response that creates the product.
    var sdk_key: String?

    init(_ product: Product, sdkKey: String? = nil) {
        tenant_id = product.tenantId
        id = product.id
        name = product.name
        key_prefix = product.keyPrefix
        trial_duration_days = product.trialDurationDays
        free_tier_enabled = product.freeTierEnabled
        sdk_key = sdkKey
    }
}

struct KeyTypeBody: Encodable {
    var id: String
    var product_id: String
    var display_name: String
    var activation_limit: Int
    var duration_days: Int?
    var fallback_access: Bool
    var lease_ttl_seconds: Int64
    var entitlements: [String]

    init(_ keyType: KeyType) {
        id = keyType.id
        product_id = keyType.productId
        display_name = keyType.displayName
        activation_limit = keyType.activationLimit
        duration_days = keyType.durationDays
        fallback_access = keyType.fallbackAccess
        lease_ttl_seconds = keyType.leaseTtlSeconds
        entitlements = keyType.entitlementCodes
    }

    enum CodingKeys: String, CodingKey {
        case id, product_id, display_name, activation_limit, duration_days, fallback_access, lease_ttl_seconds, entitlements
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(product_id, forKey: .product_id)
        try c.encode(display_name, forKey: .display_name)
        try c.encode(activation_limit, forKey: .activation_limit)
        try c.encode(duration_days, forKey: .duration_days)
        try c.encode(fallback_access, forKey: .fallback_access)
        try c.encode(lease_ttl_seconds, forKey: .lease_ttl_seconds)
        try c.encode(entitlements, forKey: .entitlements)
    }
}

struct InstanceBody: Encodable {
    var instance_id: String
    var instance_name: String
    var active: Bool
    var activated_at: Int64
    var last_validated_at: Int64?
    var deactivated_at: Int64?

    init(_ instance: Instance) {
        instance_id = instance.id
        instance_name = instance.name
        active = instance.active
        activated_at = instance.activatedAt
        last_validated_at = instance.lastValidatedAt
        deactivated_at = instance.deactivatedAt
    }

    enum CodingKeys: String, CodingKey {
        case instance_id, instance_name, active, activated_at, last_validated_at, deactivated_at
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(instance_id, forKey: .instance_id)
        try c.encode(instance_name, forKey: .instance_name)
        try c.encode(active, forKey: .active)
        try c.encode(activated_at, forKey: .activated_at)
        try c.encode(last_validated_at, forKey: .last_validated_at)
        try c.encode(deactivated_at, forKey: .deactivated_at)
    }
}

/// A license as the admin API shows it: the key masked, except in the one response that
/// creates (or remints) it.
struct LicenseBody: Encodable {
    var license: License
    var now: Int64
    var licenseKey: String?
    var instances: [Instance]?

    enum CodingKeys: String, CodingKey {
        case id, product_id, key_type_id, license_key, masked_key, status, expired, expires_at, customer_email, active_instances, created_at, instances
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(license.id, forKey: .id)
        try c.encode(license.productId, forKey: .product_id)
        try c.encode(license.keyTypeId, forKey: .key_type_id)
        if let licenseKey { try c.encode(licenseKey, forKey: .license_key) }
        try c.encode(license.maskedKey, forKey: .masked_key)
        try c.encode(license.status.rawValue, forKey: .status)
        try c.encode(license.isExpired(at: now), forKey: .expired)
        try c.encode(license.expiresAt, forKey: .expires_at)
        try c.encode(license.customerEmail, forKey: .customer_email)
        try c.encode(license.activeInstances, forKey: .active_instances)
        try c.encode(license.createdAt, forKey: .created_at)
        if let instances { try c.encode(instances.map(InstanceBody.init), forKey: .instances) }
    }
}

struct LicensePage: Encodable {
    var licenses: [LicenseBody]
    var next_cursor: String?

    enum CodingKeys: String, CodingKey { case licenses, next_cursor }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(licenses, forKey: .licenses)
        try c.encode(next_cursor, forKey: .next_cursor)
    }
}

struct SigningKeyBody: Encodable {
    var kid: String
    var public_key: String
    var status: String?
    var created_at: Int64?
}

struct AuditPage: Encodable {
    var entries: [AuditEntry]
    var next_cursor: String?

    enum CodingKeys: String, CodingKey { case entries, next_cursor }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(entries.map(AuditEntryBody.init), forKey: .entries)
        try c.encode(next_cursor, forKey: .next_cursor)
    }
}

struct AuditEntryBody: Encodable {
    var id: Int64
    var at: Int64
    var actor: String
    var action: String
    var tenant_id: String?
    var target: String?
    var details: String

    init(_ entry: AuditEntry) {
        id = entry.id
        at = entry.at
        actor = entry.actor
        action = entry.action
        tenant_id = entry.tenantId
        target = entry.target
        details = entry.details
    }
}

struct OKBody: Encodable {
    let ok = true
}
