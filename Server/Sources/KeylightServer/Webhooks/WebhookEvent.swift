import Foundation

/// What Keylight tells a developer's own systems about.
public enum WebhookEventType: String, CaseIterable, Sendable, Codable {
    /// A license was minted (admin API, dashboard or Stripe). Carries the raw license key: the
    /// only place it ever leaves the server after minting, so the developer can email it.
    case licenseCreated = "license.created"
    case licenseRevoked = "license.revoked"
    /// The license's expiry moved to now (a Stripe subscription ended).
    case licenseExpired = "license.expired"
    /// The license's expiry moved later (a Stripe invoice was paid).
    case licenseRenewed = "license.renewed"
    /// An administrator, a bulk job or a paid upgrade changed the license (key type, limit,
    /// dates, add-ons, address, note or metadata); `changes` says what, as `{field: [from, to]}`.
    case licenseUpdated = "license.updated"
    /// An activation was refused because every slot is in use: a customer who may need help
    /// or a bigger license. Sent at most once an hour per license.
    case activationLimitReached = "license.activation_limit_reached"
    /// The license ends on `date`, and one of the tenant's reminder thresholds (`days_before`; 30,
    /// 7 and 1 by default) was reached. Sent once per license, threshold and date, only for active
    /// licenses; a license first seen past several thresholds gets the nearest one only.
    case licenseExpiringSoon = "license.expiring_soon"
    /// The license's updates end on `date` (its `updates_until`), as above.
    case licenseUpdatesExpiringSoon = "license.updates_expiring_soon"
    case instanceActivated = "instance.activated"
    case instanceDeactivated = "instance.deactivated"
    /// A floating seat was freed because its device stopped validating for longer than its key
    /// type's `heartbeat_seconds` (the app crashed, slept, or lost the network).
    case instanceExpired = "instance.expired"
}

/// One event, as delivered: `{"id","type","created_at","tenant_id","data":{…}}`.
struct WebhookEvent: Encodable, Sendable {
    var id: String
    var type: WebhookEventType
    var created_at: Int64
    var tenant_id: String
    var data: WebhookEventData

    init(type: WebhookEventType, tenantId: String, at now: Int64, data: WebhookEventData) {
        id = "evt_" + RandomUUID.compactLowercaseString()
        self.type = type
        created_at = now
        tenant_id = tenantId
        self.data = data
    }
}

struct WebhookEventData: Encodable, Sendable {
    var license: LicenseBody
    /// Only on `license.created`.
    var license_key: String?
    /// Only on `instance.*`.
    var instance: WebhookInstance?
    /// Only on `license.activation_limit_reached`: the license's cap and the device refused.
    var activation_limit: Int?
    var refused_instance_name: String?
    /// What caused the change: `sdk`, `stripe`, `customer`, `offline`, or the admin's audit actor.
    var source: String
    /// Only on `instance.*`: the route the change took (`app`, `portal`, `offline_request`,
    /// `offline_proof`, `admin`).
    var how: String?
    /// Only on `license.updated` and an administrator's `license.renewed`: `{field: [from, to]}`.
    var changes: [String: [String]]?
    /// Only on `license.expiring_soon` and `license.updates_expiring_soon`: the threshold reached
    /// (days before the date) and the date (`expires_at` or `updates_until`).
    var days_before: Int?
    var date: Int64?

    init(license: License, licenseKey: String? = nil, instance: WebhookInstance? = nil, source: String, how: String? = nil) {
        self.license = LicenseBody(license: license, now: 0, shape: .webhook)
        license_key = licenseKey
        self.instance = instance
        self.source = source
        self.how = how
    }

    init(license: License, activationLimit: Int, refusedInstanceName: String) {
        self.init(license: license, source: "sdk")
        activation_limit = activationLimit
        refused_instance_name = refusedInstanceName
    }
}

struct WebhookInstance: Encodable, Sendable {
    var id: String
    var name: String
    var activated_at: Int64
    @ExplicitNull var deactivated_at: Int64?
}
