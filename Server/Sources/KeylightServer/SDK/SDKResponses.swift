import Foundation
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
        configFields(config)
        endObject()
    }

    /// The six cfg1 fields as members of the object being written: the body of `GET …/config`,
    /// and, beside `"config"`, the top level of validate and keyless (protocol 6.7: the hosted
    /// clients read them there).
    mutating func configFields(_ config: SignedProductConfig) {
        key("trial_duration_days"); integer(Int64(config.trialDurationDays))
        key("free_tier_enabled"); bool(config.freeTierEnabled)
        key("issued_at"); integer(config.issuedAt)
        key("expires_at"); integer(config.expiresAt)
        key("kid"); string(config.kid)
        key("signature"); string(config.signature)
    }
}

/// What activate and validate add for seats that float or may go over their limit (additions to
/// protocol section 2; absent otherwise, so other answers stay exactly as they were):
/// `heartbeat_seconds` (floating: validate again within it or lose the seat) and `over_limit`
/// (more seats are in use than the license's limit, which its overage allows).
struct SeatReport: Sendable {
    var heartbeatSeconds: Int?
    var overLimit: Bool

    /// nil for a license whose seats neither float nor allow overage.
    init?(_ grant: LicenseGrant) {
        guard grant.floating || grant.overagePercent > 0 else { return nil }
        heartbeatSeconds = grant.floating ? grant.heartbeatSeconds : nil
        overLimit = grant.overLimit
    }

    func write(to writer: inout JSONWriter) {
        if let heartbeatSeconds { writer.key("heartbeat_seconds"); writer.integer(Int64(heartbeatSeconds)) }
        writer.key("over_limit"); writer.bool(overLimit)
    }
}

/// What activate and validate add for an app's license pane (protocol 6.9): `customer_email`
/// (null when the license has none) and `key_type_name` (the key type's display name). Always
/// written; clients that do not know them ignore them.
struct LicenseSummary: Sendable {
    var customerEmail: String?
    var keyTypeName: String

    func write(to writer: inout JSONWriter) {
        writer.key("customer_email")
        if let customerEmail { writer.string(customerEmail) } else { writer.null() }
        writer.key("key_type_name"); writer.string(keyTypeName)
    }
}

extension LicenseSummary {
    init(_ grant: LicenseGrant) {
        self.init(customerEmail: grant.customerEmail, keyTypeName: grant.keyTypeName)
    }
}

/// The members a 422 `LICENSE_EXPIRED` from activate adds (protocol 6.7): the signed `expired`
/// lease for the instance the activation would have used, and the license's end.
struct ExpiredActivation: SDKResponse {
    var licenseExpiresAt: Int64?
    var lease: Lease

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("license_expires_at"); writer.integer(licenseExpiresAt)
        writer.key("lease"); writer.lease(lease)
        writer.endObject()
    }
}

/// `{"activated":true,"instance_id","license_expires_at","lease"}` and the ``LicenseSummary``;
/// `license_expires_at` is `null` for lifetime licenses, and always written.
struct ActivateResponse: SDKResponse {
    var instanceId: String
    var licenseExpiresAt: Int64?
    var lease: Lease
    var seat: SeatReport?
    var summary: LicenseSummary
    /// An App Store exchange also answers the license's key (for the app's other builds) and
    /// where the purchase came from.
    var licenseKey: String? = nil
    var appStore: (originalTransactionId: String, environment: String)? = nil

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("activated"); writer.bool(true)
        writer.key("instance_id"); writer.string(instanceId)
        writer.key("license_expires_at"); writer.integer(licenseExpiresAt)
        writer.key("lease"); writer.lease(lease)
        seat?.write(to: &writer)
        summary.write(to: &writer)
        if let licenseKey { writer.key("license_key"); writer.string(licenseKey) }
        if let appStore {
            writer.key("appstore"); writer.beginObject()
            writer.key("original_transaction_id"); writer.string(appStore.originalTransactionId)
            writer.key("environment"); writer.string(appStore.environment)
            writer.endObject()
        }
        writer.endObject()
    }
}

struct ValidateResponse: SDKResponse {
    var valid: Bool
    var licenseExpiresAt: Int64?
    var lease: Lease
    var config: SignedProductConfig
    var seat: SeatReport?
    var summary: LicenseSummary

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("valid"); writer.bool(valid)
        writer.key("license_expires_at"); writer.integer(licenseExpiresAt)
        writer.key("lease"); writer.lease(lease)
        writer.key("config"); writer.config(config)
        writer.configFields(config)
        seat?.write(to: &writer)
        summary.write(to: &writer)
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
        writer.key("received"); writer.bool(true)
        writer.key("ok"); writer.bool(true)
        writer.key("config"); writer.config(config)
        writer.configFields(config)
        writer.endObject()
    }
}

/// `lost-key`'s answer, the same whether or not the address is known (protocol 6.9).
struct LostKeyResponse: SDKResponse {
    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("received"); writer.bool(true)
        writer.endObject()
    }
}

struct ConfigResponse: SDKResponse {
    var config: SignedProductConfig

    func write(to writer: inout JSONWriter) {
        writer.config(config)
    }
}

/// `{"activation_limit":n,"instances":[…]}` (protocol 6.3): the slots of a license and the
/// devices holding them. Also the extra members of a full license's 409.
struct SeatsResponse: Encodable, Sendable {
    var activation_limit: Int
    var instances: [Seat]

    struct Seat: Encodable, Sendable {
        var instance_id: String
        var instance_name: String
        var activated_at: Int64
        /// The last validation the server has written, else the activation.
        var last_seen_at: Int64
        /// Keylight addition: activated from an offline request file (it frees its seat with a
        /// deactivation proof, or here).
        var offline: Bool
    }

    init(activationLimit: Int, instances: [Instance]) {
        activation_limit = activationLimit
        self.instances = instances.map {
            Seat(instance_id: $0.id, instance_name: $0.name, activated_at: $0.activatedAt, last_seen_at: $0.lastSeenAt, offline: $0.isOffline)
        }
    }

    var jsonBytes: [UInt8] { Array((try? JSONBody.encoder.encode(self)) ?? Data()) }
}

/// `{"response":"<response file text>"}`.
struct OfflineActivateResponse: Encodable, Sendable {
    var response: String
}
