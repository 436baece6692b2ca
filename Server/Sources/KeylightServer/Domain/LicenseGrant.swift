import KeylightCore

/// What the hot SDK paths need to know about a license, read in one query.
struct LicenseGrant: Decodable, Equatable, Sendable {
    var licenseId: String
    var status: LicenseStatus
    var expiresAt: Int64?
    var keyHash: String
    var activationLimit: Int
    var fallbackAccess: Bool
    var leaseTtlSeconds: Int64
    var entitlements: String
    /// Lease lifetime of an offline activation (protocol 6.4).
    var offlineLeaseDays: Int
    /// Present when the query named an instance and it belongs to this license.
    var instanceId: String?
    var instanceActive: Bool?
    var instanceMachineHash: String?
    /// The device key of an instance activated offline.
    var instanceDeviceKey: String?
    /// Seats held only while validating, for `heartbeatSeconds` after each validation.
    var floating: Bool
    var heartbeatSeconds: Int
    var overagePercent: Int
    /// Seats in use as read (kept current by the transactions that change them).
    var activeInstances: Int
    /// The newest build release date the purchase covers, signed into active leases.
    var updatesUntil: Int64?
    /// For an app's license pane (protocol 6.9): the buyer's address (nil when the license has
    /// none) and the key type's display name. Read with the rest, in the same query.
    var customerEmail: String?
    var keyTypeName: String
    /// The license's add-on codes (comma-separated), on top of the key type's.
    var entitlementsAdded: String?
    /// Undated until its first activation (the key type's `expires_from: first_activation`).
    var startsOnActivationFlag: Bool?
    var startsOnActivation: Bool {
        get { startsOnActivationFlag ?? false }
        set { startsOnActivationFlag = newValue }
    }
    /// The key type's terms, which date a license on its first activation.
    var durationDays: Int?
    var updatesDays: Int?

    /// The key type's entitlements and the license's add-ons, plus the signed updates bound
    /// when the license has one.
    var entitlementCodes: [String] {
        var codes = entitlements.split(separator: ",").map(String.init)
        if let entitlementsAdded, !entitlementsAdded.isEmpty {
            let own = Set(codes)
            codes += entitlementsAdded.split(separator: ",").map(String.init).filter { !own.contains($0) }
        }
        if let updatesUntil { codes.append(UpdatesEntitlement.code(until: updatesUntil)) }
        return codes
    }

    /// The dates the first activation at `now` gives a license that starts on it.
    func firstActivationDates(now: Int64) -> (expiresAt: Int64?, updatesUntil: Int64?) {
        (expiresAt ?? durationDays.map { now + Int64($0) * 86_400 }, updatesUntil ?? updatesDays.map { now + Int64($0) * 86_400 })
    }

    /// Past its expiry at `now` (a lifetime license never is).
    func isExpired(at now: Int64) -> Bool { expiresAt.map { $0 <= now } ?? false }

    /// Seats the license may hold: the limit plus the overage.
    var seatCap: Int { SeatCap.of(limit: activationLimit, overagePercent: overagePercent) }
    /// More seats in use than the limit (possible only with overage).
    var overLimit: Bool { activeInstances > activationLimit }
    /// An online lease's lifetime: a floating seat's lease lasts one heartbeat, so an app that
    /// stops validating stops being licensed about when its seat is freed.
    var onlineLeaseTTL: Int64 { floating ? Int64(heartbeatSeconds) : leaseTtlSeconds }

    enum CodingKeys: String, CodingKey {
        case licenseId = "license_id", status, expiresAt = "expires_at", keyHash = "key_hash", activationLimit = "activation_limit"
        case fallbackAccess = "fallback_access", leaseTtlSeconds = "lease_ttl_seconds", entitlements, offlineLeaseDays = "offline_lease_days", instanceId = "instance_id"
        case instanceActive = "instance_active", instanceMachineHash = "instance_machine_hash", instanceDeviceKey = "instance_device_key"
        case floating, heartbeatSeconds = "heartbeat_seconds", overagePercent = "overage_percent", activeInstances = "active_instances", updatesUntil = "updates_until"
        case customerEmail = "customer_email", keyTypeName = "key_type_name"
        case entitlementsAdded = "entitlements_added", startsOnActivationFlag = "starts_on_activation", durationDays = "duration_days", updatesDays = "updates_days"
    }
}
