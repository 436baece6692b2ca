import KeylightCore

/// Responses the SDK routes write with ``JSONWriter`` (they are on every validate).
protocol SDKResponse {
    func write(to writer: inout JSONWriter)
}

extension SDKResponse {
    var jsonBytes: [UInt8] {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.bytes
    }
}

extension JSONWriter {
    /// The lease object, with exactly the protocol's fields.
    mutating func lease(_ lease: Lease) {
        beginObject()
        key("kid"); string(lease.kid)
        key("licenseKeyHash"); string(lease.licenseKeyHash)
        key("instanceId"); string(lease.instanceId)
        key("issuedAt"); integer(lease.issuedAt)
        key("expiresAt"); integer(lease.expiresAt)
        key("status"); string(lease.status.rawValue)
        key("signature"); string(lease.signature)
        key("entitlements"); strings(lease.entitlements)
        endObject()
    }

    /// The signed config (cfg1) object.
    mutating func config(_ config: SignedProductConfig) {
        beginObject()
        key("trial_duration_days"); integer(Int64(config.trialDurationDays))
        key("free_tier_enabled"); bool(config.freeTierEnabled)
        key("issued_at"); integer(config.issuedAt)
        key("expires_at"); integer(config.expiresAt)
        key("kid"); string(config.kid)
        key("signature"); string(config.signature)
        endObject()
    }
}

/// `{"activated":true,"instance_id","license_expires_at","lease"}`; `license_expires_at` is
/// `null` for lifetime licenses, and always written.
struct ActivateResponse: SDKResponse {
    var instanceId: String
    var licenseExpiresAt: Int64?
    var lease: Lease

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("activated"); writer.bool(true)
        writer.key("instance_id"); writer.string(instanceId)
        writer.key("license_expires_at"); writer.integer(licenseExpiresAt)
        writer.key("lease"); writer.lease(lease)
        writer.endObject()
    }
}

struct ValidateResponse: SDKResponse {
    var valid: Bool
    var licenseExpiresAt: Int64?
    var lease: Lease
    var config: SignedProductConfig

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("valid"); writer.bool(valid)
        writer.key("license_expires_at"); writer.integer(licenseExpiresAt)
        writer.key("lease"); writer.lease(lease)
        writer.key("config"); writer.config(config)
        writer.endObject()
    }
}

struct DeactivateResponse: SDKResponse {
    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("deactivated"); writer.bool(true)
        writer.endObject()
    }
}

struct KeylessResponse: SDKResponse {
    var config: SignedProductConfig

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("ok"); writer.bool(true)
        writer.key("config"); writer.config(config)
        writer.endObject()
    }
}

struct ConfigResponse: SDKResponse {
    var config: SignedProductConfig

    func write(to writer: inout JSONWriter) {
        writer.config(config)
    }
}
