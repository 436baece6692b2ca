import KeylightCore
import KeylightSigning

struct CreateTenantRequest: Decodable {
    var id: String?
    var name: String?
}

struct CreateProductRequest: Decodable {
    var id: String?
    var name: String?
    var key_prefix: String?
    var trial_duration_days: Int?
    var free_tier_enabled: Bool?
    /// Whether the customer portal is open (default true).
    var portal_enabled: Bool?
    /// Whether SDK requests must carry the SDK key (default true; protocol 6.7).
    var sdk_key_required: Bool?
}

struct UpdateProductRequest: Decodable {
    var name: String?
    var trial_duration_days: Int?
    var free_tier_enabled: Bool?
    /// Whether the customer portal is open (default true).
    var portal_enabled: Bool?
    /// Whether SDK requests must carry the SDK key (default true; protocol 6.7).
    var sdk_key_required: Bool?
    /// The App Store app whose purchases this product takes: absent keeps, null removes.
    var appstore_bundle_id: String??
    /// `["Production"]`, `["Sandbox"]` or both: absent keeps, null resets to Production only.
    var appstore_environments: [String]??
    /// Whether the appcast and downloads answer without a lease (trials, the free tier).
    var public_feed: Bool?
    /// The developer's own Sparkle public key (base64, `SUPublicEDKey`): absent keeps, null
    /// returns to a new key of the server's.
    var sparkle_public_key: String??

    enum CodingKeys: String, CodingKey {
        case name, trial_duration_days, free_tier_enabled, portal_enabled, sdk_key_required, appstore_bundle_id, appstore_environments
        case public_feed, sparkle_public_key
    }

    init(name: String? = nil, trial_duration_days: Int? = nil, free_tier_enabled: Bool? = nil, portal_enabled: Bool? = nil, sdk_key_required: Bool? = nil,
         appstore_bundle_id: String?? = nil, appstore_environments: [String]?? = nil) {
        self.name = name
        self.trial_duration_days = trial_duration_days
        self.free_tier_enabled = free_tier_enabled
        self.portal_enabled = portal_enabled
        self.sdk_key_required = sdk_key_required
        self.appstore_bundle_id = appstore_bundle_id
        self.appstore_environments = appstore_environments
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        trial_duration_days = try c.decodeIfPresent(Int.self, forKey: .trial_duration_days)
        free_tier_enabled = try c.decodeIfPresent(Bool.self, forKey: .free_tier_enabled)
        portal_enabled = try c.decodeIfPresent(Bool.self, forKey: .portal_enabled)
        sdk_key_required = try c.decodeIfPresent(Bool.self, forKey: .sdk_key_required)
        if c.contains(.appstore_bundle_id) {
            appstore_bundle_id = .some(try c.decodeNil(forKey: .appstore_bundle_id) ? nil : try c.decode(String.self, forKey: .appstore_bundle_id))
        }
        public_feed = try c.decodeIfPresent(Bool.self, forKey: .public_feed)
        if c.contains(.sparkle_public_key) {
            sparkle_public_key = .some(try c.decodeNil(forKey: .sparkle_public_key) ? nil : try c.decode(String.self, forKey: .sparkle_public_key))
        }
        if c.contains(.appstore_environments) {
            appstore_environments = .some(try c.decodeNil(forKey: .appstore_environments) ? nil : try c.decode([String].self, forKey: .appstore_environments))
        }
    }
}

struct CreateKeyTypeRequest: Decodable {
    var id: String?
    var display_name: String?
    var activation_limit: Int?
    var duration_days: Int?
    var fallback_access: Bool?
    var lease_ttl_seconds: Int64?
    var entitlements: [String]?
    var stripe_price_id: String?
    var stripe_mode: String?
    /// Lifetime of offline leases (protocol 6.4), 1-3650 days; default 365.
    var offline_lease_days: Int?
    /// Seats held only while the device validates (default false).
    var floating: Bool?
    /// 10-86400 seconds, default 600: how long a silent floating device keeps its seat.
    var heartbeat_seconds: Int?
    /// 0-1 in steps of 0.01: activations allowed past the limit (0.25 = 25 %).
    var overage: Double?
    /// Days of updates a purchase covers; null = every build.
    var updates_days: Int?
    /// `purchase` (the default) or `first_activation`: when `duration_days` and `updates_days` start.
    var expires_from: String?
}

struct CreateLicenseRequest: Decodable {
    var key_type_id: String?
    /// An existing key to import instead of minting one (protocol 6.1).
    var license_key: String?
    var customer_email: String?
    var expires_at: Int64?
    /// Overrides the key type's `updates_days` (an imported purchase keeps its own date).
    var updates_until: Int64?
    /// Mail the key to `customer_email` (queued with the license, sent by the mail service).
    var send_email: Bool?
}

/// The answer to a resend: the mail is queued (the outbox sends it).
struct ResendEmailBody: Encodable {
    var queued: Bool
    var license_id: String
    var to: String
}

/// `POST …/licenses/{id}/email`: mail the key again, optionally to a corrected address (saved).
/// `POST …/signing-keys/rotate` (the body is optional).
struct RotateSigningKeysRequest: Decodable, Sendable {
    /// Rotate only if this is the staged key's kid (409 `STAGED_KEY_MISMATCH` otherwise).
    var expected_next_kid: String?
}

struct ResendEmailRequest: Decodable {
    var customer_email: String?
}

/// `PUT /admin/v1/tenants/{t}/stripe`. A field that is absent or blank keeps what is stored
/// (a form that changes only one secret never erases the other); `"secret_key": null` removes
/// the secret key.
struct StripeSettingsRequest: Decodable {
    var webhook_secret: String?
    /// Absent: keep; null: remove; a value: replace.
    var secret_key: String??

    enum CodingKeys: String, CodingKey { case webhook_secret, secret_key }

    init(webhookSecret: String?, secretKey: String??) {
        webhook_secret = webhookSecret
        secret_key = secretKey
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        webhook_secret = try container.decodeIfPresent(String.self, forKey: .webhook_secret)
        if container.contains(.secret_key) {
            secret_key = .some(try container.decodeNil(forKey: .secret_key) ? nil : try container.decode(String.self, forKey: .secret_key))
        }
    }
}

extension Field {
    /// Tenant, product and key-type ids: `[a-z0-9][a-z0-9_-]{0,62}`.
    static func pathId(_ value: String?, _ name: String) throws(APIError) -> String {
        let text = try required(value, name, max: 63)
        guard TenantPath.isValidId(text) else { throw .invalidRequest("Field \(name) must match [a-z0-9][a-z0-9_-]{0,62}.") }
        return text
    }

    static func email(_ value: String?, _ name: String = "customer_email") throws(APIError) -> String? {
        guard let text = try optional(value, name, max: 254) else { return nil }
        // Unicode scalars, not Characters: an `@` followed by a combining mark or an emoji modifier is
        // one Character, and would hide the `@` from a Character split (openapi.yaml's pattern, which
        // clients check against, reads code points).
        let parts = text.unicodeScalars.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !text.unicodeScalars.contains(where: \.properties.isWhitespace) else {
            throw .invalidRequest("Field \(name) is not an email address.")
        }
        return text.lowercased()
    }

    /// Entitlement codes travel inside signed lease payloads: 1-64 of `a-z 0-9 _ - . :`, so
    /// never the `,` and `|` separators.
    static func entitlements(_ values: [String]?, name: String = "entitlements") throws(APIError) -> [String] {
        guard let values else { throw .invalidRequest("Missing field \(name).") }
        guard values.count <= 64 else { throw .invalidRequest("At most 64 entitlements.") }
        for code in values {
            let bytes = Array(code.utf8)
            guard (1...64).contains(bytes.count), bytes.allSatisfy({ byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || [UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: ":")].contains(byte)
            }) else {
                throw .invalidRequest("Entitlement codes must be 1-64 characters of a-z 0-9 _ - . :")
            }
        }
        if values.contains(where: { $0.hasPrefix(UpdatesEntitlement.prefix) }) {
            throw .invalidRequest("Entitlement codes starting with \(UpdatesEntitlement.prefix) are reserved: set updates_days on the key type.")
        }
        return Array(Set(values)).sorted()
    }

    /// `overage` as whole percent: a number from 0 to 1 in steps of 0.01 (0.25 = 25 %). Finer
    /// steps are refused rather than rounded, so the cap is what the developer wrote.
    static func overagePercent(_ value: Double?) throws(APIError) -> Int {
        guard let value else { return 0 }
        guard value.isFinite, (0...1).contains(value) else { throw .invalidRequest("Field overage must be between 0 and 1.") }
        let percent = (value * 100).rounded()
        guard abs(value * 100 - percent) < 1e-6 else { throw .invalidRequest("Field overage must be a multiple of 0.01.") }
        return Int(percent)
    }

    static func integer<T: BinaryInteger>(_ value: T?, _ name: String, in range: ClosedRange<T>) throws(APIError) -> T {
        guard let value else { throw .invalidRequest("Missing field \(name).") }
        guard range.contains(value) else { throw .invalidRequest("Field \(name) must be between \(range.lowerBound) and \(range.upperBound).") }
        return value
    }
}
