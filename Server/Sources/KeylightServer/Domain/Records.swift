/// A tenant: one developer or company with its own products.
public struct Tenant: Codable, Sendable, Hashable {
    public var id: String
    public var name: String
    public var createdAt: Int64

    /// Column names: rows decode without a key strategy, which would re-derive snake case on every access.
    enum CodingKeys: String, CodingKey {
        case id, name, createdAt = "created_at"
    }
}

/// A product: an app that licenses are sold for.
public struct Product: Codable, Sendable, Hashable {
    public var tenantId: String
    public var id: String
    public var name: String
    public var keyPrefix: String
    /// Hex SHA-256 of the SDK key; the key itself is shown once and never stored.
    public var sdkKeyHash: String
    public var trialDurationDays: Int
    public var freeTierEnabled: Bool
    public var createdAt: Int64
    public var updatedAt: Int64
    /// The customer portal (`/portal/<tenant>/<product>`) is open; on by default, off in the product's settings.
    public var portalEnabled: Bool = true
    /// Requests to its SDK API must carry the SDK key (the default). Off (protocol 6.7), a request
    /// without the header is served; one with a wrong key is still 401.
    public var sdkKeyRequired: Bool = true
    /// The App Store app (bundle id) whose purchases this product takes (`appstore/activate`); nil: none.
    public var appStoreBundleId: String? = nil
    /// The App Store environments accepted, comma-separated (`Production`, `Sandbox`); nil: `Production` only.
    public var appStoreEnvironments: String? = nil

    /// The environments a transaction may come from.
    public var acceptedAppStoreEnvironments: [String] {
        appStoreEnvironments.map { $0.split(separator: ",").map(String.init) } ?? ["Production"]
    }

    /// Column names: rows decode without a key strategy, which would re-derive snake case on every access.
    enum CodingKeys: String, CodingKey {
        case tenantId = "tenant_id", id, name, keyPrefix = "key_prefix", sdkKeyHash = "sdk_key_hash", trialDurationDays = "trial_duration_days", freeTierEnabled = "free_tier_enabled", createdAt = "created_at", updatedAt = "updated_at"
        case portalEnabled = "portal_enabled", sdkKeyRequired = "sdk_key_required"
        case appStoreBundleId = "appstore_bundle_id", appStoreEnvironments = "appstore_environments"
    }
}

/// A kind of license a product sells: how many devices, for how long, with what.
public struct KeyType: Codable, Sendable, Hashable {
    public var tenantId: String
    public var productId: String
    public var id: String
    public var displayName: String
    public var activationLimit: Int
    /// nil = lifetime.
    public var durationDays: Int?
    /// Lapsed customers keep limited access (`fallback` leases).
    public var fallbackAccess: Bool
    public var leaseTtlSeconds: Int64
    /// Comma-separated entitlement codes (codes never contain commas).
    public var entitlements: String
    public var createdAt: Int64
    /// The Stripe price a checkout for this key type sells (`price_…`); nil = not for sale through checkout.
    public var stripePriceId: String? = nil
    /// `payment` (one-off) or `subscription` (the price recurs; `invoice.paid` renews the license).
    public var stripeMode: String? = nil
    /// Lifetime of a lease made by offline activation (never past the license's expiry).
    public var offlineLeaseDays: Int = KeyType.defaultOfflineLeaseDays
    /// Seats are held only while their device keeps validating (floating, concurrent-use licenses).
    public var floating: Bool = false
    /// How long a floating seat outlives its device's last validation; also its leases' lifetime.
    public var heartbeatSeconds: Int = KeyType.defaultHeartbeatSeconds
    /// How far past `activationLimit` activations may go, in whole percent (0-100): see ``SeatCap``.
    public var overagePercent: Int = 0
    /// Days of updates a purchase covers (nil = every build, forever): see ``License/updatesUntil``.
    public var updatesDays: Int? = nil
    /// The Paddle Billing price (`pri_…`) whose purchases mint this key type.
    public var paddlePriceId: String? = nil
    /// The Lemon Squeezy variant (a number) whose orders mint this key type.
    public var lemonSqueezyVariantId: String? = nil
    /// The Polar product (a UUID) whose orders mint this key type.
    public var polarProductId: String? = nil
    /// The App Store product (StoreKit `productId`) whose purchases are this key type.
    public var appStoreProductId: String? = nil
    /// When a minted license's dates start: at purchase (nil, the default) or at its first
    /// activation (gift, bundle and reseller keys).
    public var expiresFrom: ExpiresFrom? = nil
    /// A paid upgrade to this key type starts a new updates window (its `updates_days` from the
    /// upgrade) instead of keeping the license's; nil or false: keeps it.
    public var upgradeRestartsUpdates: Bool? = nil

    /// When a license's `duration_days` and `updates_days` start counting.
    public enum ExpiresFrom: String, Codable, Sendable, CaseIterable {
        case purchase
        case firstActivation = "first_activation"
    }

    /// Whether a license minted now waits for its first activation to date itself. A
    /// subscription dates its licenses by its own periods, so never for those.
    func startsOnActivation(subscription: Bool = false) -> Bool {
        expiresFrom == .firstActivation && !subscription && (durationDays != nil || updatesDays != nil)
    }

    /// A new license's expiry and updates bound, counted from `now` (nil when it starts on
    /// activation or the key type sets none).
    func mintDates(now: Int64, subscription: Bool = false) -> (expiresAt: Int64?, updatesUntil: Int64?) {
        guard !startsOnActivation(subscription: subscription) else { return (nil, nil) }
        return (durationDays.map { now + Int64($0) * 86_400 }, updatesDays.map { now + Int64($0) * 86_400 })
    }

    public static let defaultOfflineLeaseDays = 365
    public static let defaultHeartbeatSeconds = 600
    /// Shorter heartbeats would turn every app into a load test; a day is the longest a floating seat waits.
    public static let heartbeatRange = 10...86_400

    public var entitlementCodes: [String] {
        entitlements.split(separator: ",").map(String.init)
    }

    /// Column names: rows decode without a key strategy, which would re-derive snake case on every access.
    enum CodingKeys: String, CodingKey {
        case tenantId = "tenant_id", productId = "product_id", id, displayName = "display_name", activationLimit = "activation_limit", durationDays = "duration_days", fallbackAccess = "fallback_access", leaseTtlSeconds = "lease_ttl_seconds", entitlements, createdAt = "created_at"
        case stripePriceId = "stripe_price_id", stripeMode = "stripe_mode", offlineLeaseDays = "offline_lease_days"
        case floating, heartbeatSeconds = "heartbeat_seconds", overagePercent = "overage_percent", updatesDays = "updates_days"
        case paddlePriceId = "paddle_price_id", lemonSqueezyVariantId = "lemonsqueezy_variant_id", polarProductId = "polar_product_id"
        case appStoreProductId = "appstore_product_id", expiresFrom = "expires_from", upgradeRestartsUpdates = "upgrade_restarts_updates"
    }
}

/// What an administrator has decided about a license. Expiry is separate: it follows from
/// `expiresAt` and the clock.
public enum LicenseStatus: String, Codable, Sendable, CaseIterable {
    case active, suspended, revoked
}

public struct License: Codable, Sendable, Hashable {
    public var id: String
    public var tenantId: String
    public var productId: String
    public var keyTypeId: String
    public var keyHash: String
    public var maskedKey: String
    public var status: LicenseStatus
    /// nil = lifetime.
    public var expiresAt: Int64?
    public var customerEmail: String?
    public var activeInstances: Int
    public var createdAt: Int64
    public var updatedAt: Int64
    /// Builds released up to this time are covered for good; newer ones run in the limited
    /// state. Fixed when the license is minted (purchase + the key type's `updates_days`); nil = no bound.
    public var updatesUntil: Int64?
    /// Where a paid license came from (`stripe`, `paddle`, `lemonsqueezy`, `polar`); nil when an
    /// administrator made it.
    public var paymentSource: String? = nil
    /// The order, transaction or Checkout Session that paid for it, in `paymentSource`'s ids.
    public var paymentOrderId: String? = nil
    /// The license's own device limit, in place of its key type's; nil: the key type's.
    public var activationLimitOverride: Int? = nil
    /// Add-on entitlement codes, comma-separated, on top of the key type's; nil: none.
    public var entitlementsAdded: String? = nil
    /// The developer's own note (never shown to the buyer).
    public var note: String? = nil
    /// Its key type starts its dates on first activation, and no device has activated yet:
    /// `expiresAt` is nil until then without meaning "lifetime".
    public var startsOnActivationFlag: Bool? = nil

    public var startsOnActivation: Bool { startsOnActivationFlag ?? false }

    /// The add-on codes.
    public var addedEntitlementCodes: [String] {
        (entitlementsAdded ?? "").split(separator: ",").map(String.init)
    }

    public init(
        id: String, tenantId: String, productId: String, keyTypeId: String, keyHash: String, maskedKey: String,
        status: LicenseStatus, expiresAt: Int64?, customerEmail: String?, activeInstances: Int, createdAt: Int64, updatedAt: Int64,
        updatesUntil: Int64? = nil
    ) {
        self.updatesUntil = updatesUntil
        self.id = id
        self.tenantId = tenantId
        self.productId = productId
        self.keyTypeId = keyTypeId
        self.keyHash = keyHash
        self.maskedKey = maskedKey
        self.status = status
        self.expiresAt = expiresAt
        self.customerEmail = customerEmail
        self.activeInstances = activeInstances
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Leaves a newly minted license undated until its first activation when its key type says
    /// so (``KeyType/expiresFrom``); the activation that takes its first seat dates it.
    mutating func waitForFirstActivation(_ keyType: KeyType, subscription: Bool) {
        guard keyType.startsOnActivation(subscription: subscription) else { return }
        expiresAt = nil
        updatesUntil = nil
        startsOnActivationFlag = true
    }

    /// True once `expiresAt` has passed.
    public func isExpired(at now: Int64) -> Bool {
        expiresAt.map { $0 <= now } ?? false
    }

    /// Column names: rows decode without a key strategy, which would re-derive snake case on every access.
    enum CodingKeys: String, CodingKey {
        case id, tenantId = "tenant_id", productId = "product_id", keyTypeId = "key_type_id", keyHash = "key_hash", maskedKey = "masked_key", status, expiresAt = "expires_at", customerEmail = "customer_email", activeInstances = "active_instances", createdAt = "created_at", updatedAt = "updated_at"
        case updatesUntil = "updates_until", paymentSource = "payment_source", paymentOrderId = "payment_order_id"
        case activationLimitOverride = "activation_limit_override", entitlementsAdded = "entitlements_added", note
        case startsOnActivationFlag = "starts_on_activation"
    }
}

/// One device a license is activated on.
public struct Instance: Codable, Sendable, Hashable {
    public var id: String
    public var licenseId: String
    public var name: String
    public var machineHash: String?
    public var active: Bool
    public var activatedAt: Int64
    public var lastValidatedAt: Int64?
    public var deactivatedAt: Int64?
    /// Base64 Ed25519 public key of a device activated offline (protocol 6.4): its deactivation
    /// proofs must be signed by the matching private key. nil for online activations.
    public var deviceKey: String? = nil
    /// A floating seat's deadline: the seat is freed by the sweep once this passes without a
    /// validation. nil for seats that do not float, and once the instance is inactive.
    public var seatExpiresAt: Int64? = nil

    /// Activated from an offline request file (freed by its deactivation proof).
    public var isOffline: Bool { deviceKey != nil }

    /// The last validation the server has written, else the activation.
    public var lastSeenAt: Int64 { max(lastValidatedAt ?? activatedAt, activatedAt) }

    /// Column names: rows decode without a key strategy, which would re-derive snake case on every access.
    enum CodingKeys: String, CodingKey {
        case id, licenseId = "license_id", name, machineHash = "machine_hash", active, activatedAt = "activated_at", lastValidatedAt = "last_validated_at", deactivatedAt = "deactivated_at"
        case deviceKey = "device_key", seatExpiresAt = "seat_expires_at"
    }
}

/// How many seats a license may hold: its key type's limit plus the allowed overage, rounded
/// down (a limit of 5 with 25 % overage holds 6). Integer arithmetic on bounded inputs (limit at
/// most 100,000, overage at most 100 %), so it cannot overflow.
enum SeatCap {
    static func of(limit: Int, overagePercent: Int) -> Int {
        let percent = min(max(overagePercent, 0), 100)
        return limit + limit * percent / 100
    }
}

/// One line of the audit log.
public struct AuditEntry: Codable, Sendable, Hashable {
    public var id: Int64
    public var at: Int64
    public var actor: String
    public var action: String
    public var tenantId: String?
    public var target: String?
    /// JSON object with the change's parameters (never secrets).
    public var details: String
    /// `user`, `token`, `provider`, `customer` or `system` (nil on entries written before 0022).
    public var actorKind: String?
    /// The user's or token's id.
    public var actorId: String?
    /// The request's client address and user agent (users and tokens).
    public var actorAddress: String?
    public var actorUserAgent: String?

    /// Column names: rows decode without a key strategy, which would re-derive snake case on every access.
    enum CodingKeys: String, CodingKey {
        case id, at, actor, action, tenantId = "tenant_id", target, details
        case actorKind = "actor_kind", actorId = "actor_id", actorAddress = "actor_address", actorUserAgent = "actor_user_agent"
    }
}
