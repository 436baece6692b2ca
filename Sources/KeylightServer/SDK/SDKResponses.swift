import KeylightCore

/// `{"activated":true,"instance_id","license_expires_at","lease"}`; `license_expires_at` is
/// `null` for lifetime licenses, so it is always written.
struct ActivateResponse: Encodable {
    var instanceId: String
    var licenseExpiresAt: Int64?
    var lease: Lease

    enum CodingKeys: String, CodingKey {
        case activated, instanceId = "instance_id", licenseExpiresAt = "license_expires_at", lease
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(true, forKey: .activated)
        try container.encode(instanceId, forKey: .instanceId)
        try container.encode(licenseExpiresAt, forKey: .licenseExpiresAt)
        try container.encode(lease, forKey: .lease)
    }
}

struct ValidateResponse: Encodable {
    var valid: Bool
    var licenseExpiresAt: Int64?
    var lease: Lease
    var config: SignedProductConfig

    enum CodingKeys: String, CodingKey {
        case valid, licenseExpiresAt = "license_expires_at", lease, config
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(valid, forKey: .valid)
        try container.encode(licenseExpiresAt, forKey: .licenseExpiresAt)
        try container.encode(lease, forKey: .lease)
        try container.encode(config, forKey: .config)
    }
}

struct DeactivateResponse: Encodable {
    let deactivated = true
}

struct KeylessResponse: Encodable {
    let ok = true
    var config: SignedProductConfig
}
