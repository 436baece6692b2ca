import Foundation

// How a license and its instances look to everyone outside the server, defined once.

/// An instance as the admin API shows it (a license's `instances`).
struct InstanceBody: Encodable {
    var instance_id: String
    var instance_name: String
    var active: Bool
    var activated_at: Int64
    @ExplicitNull var last_validated_at: Int64?
    @ExplicitNull var deactivated_at: Int64?
    /// A floating seat's deadline (null for seats that do not float).
    @ExplicitNull var seat_expires_at: Int64?

    init(_ instance: Instance) {
        instance_id = instance.id
        instance_name = instance.name
        active = instance.active
        activated_at = instance.activatedAt
        last_validated_at = instance.lastValidatedAt
        deactivated_at = instance.deactivatedAt
        seat_expires_at = instance.seatExpiresAt
    }
}

/// A license as everything outside the server sees it, defined once: the admin API's answers and
/// (a subset, ``Shape/webhook``) the `license` of every webhook event. The key is masked, except
/// in the one admin response that creates (or remints) it.
struct LicenseBody: Encodable, Sendable {
    var license: License
    var now: Int64
    var licenseKey: String?
    var instances: [Instance]?
    var shape: Shape = .admin
    /// The license's key type, for its effective limit and entitlements (admin answers).
    var keyType: KeyType? = nil
    /// The license's metadata (admin answers; nil shows `{}`).
    var metadata: [String: MetadataValue]? = nil

    /// Which fields: the admin API shows them all; webhooks the ones they have always carried.
    enum Shape: Sendable {
        case admin, webhook
    }

    enum CodingKeys: String, CodingKey {
        case id, product_id, key_type_id, license_key, masked_key, status, expired, expires_at, customer_email, active_instances, created_at, updates_until, instances
        case payment_source, payment_order_id
        case activation_limit, activation_limit_override, over_limit, entitlements, entitlements_added, note, metadata, starts_on_activation
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(license.id, forKey: .id)
        try c.encode(license.productId, forKey: .product_id)
        try c.encode(license.keyTypeId, forKey: .key_type_id)
        if let licenseKey { try c.encode(licenseKey, forKey: .license_key) }
        try c.encode(license.maskedKey, forKey: .masked_key)
        try c.encode(license.status.rawValue, forKey: .status)
        if shape == .admin { try c.encode(license.isExpired(at: now), forKey: .expired) }
        try c.encode(license.expiresAt, forKey: .expires_at)
        try c.encode(license.customerEmail, forKey: .customer_email)
        try c.encode(license.activeInstances, forKey: .active_instances)
        try c.encode(license.createdAt, forKey: .created_at)
        guard shape == .admin else { return }
        try c.encode(license.updatesUntil, forKey: .updates_until)
        try c.encode(license.paymentSource, forKey: .payment_source)
        try c.encode(license.paymentOrderId, forKey: .payment_order_id)
        try c.encode(license.startsOnActivation, forKey: .starts_on_activation)
        try c.encode(license.activationLimitOverride, forKey: .activation_limit_override)
        if let keyType {
            let limit = license.activationLimitOverride ?? keyType.activationLimit
            try c.encode(limit, forKey: .activation_limit)
            // A lowered limit frees no device: new activations wait until fewer are in use.
            try c.encode(license.activeInstances > limit, forKey: .over_limit)
            try c.encode(Set(keyType.entitlementCodes).union(license.addedEntitlementCodes).sorted(), forKey: .entitlements)
        }
        try c.encode(license.addedEntitlementCodes, forKey: .entitlements_added)
        try c.encode(license.note, forKey: .note)
        try c.encode(metadata ?? [:], forKey: .metadata)
        if let instances { try c.encode(instances.map(InstanceBody.init), forKey: .instances) }
    }
}
