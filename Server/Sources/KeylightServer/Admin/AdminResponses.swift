import KeylightCore
import KeylightSigning

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
    var portal_enabled: Bool
    var sdk_key_required: Bool
    @ExplicitNull var appstore_bundle_id: String?
    var appstore_environments: [String]
    /// Present only in the response that creates the product.
    var sdk_key: String?
    /// Present when one product is read or changed: its update settings (issue 51).
    var public_feed: Bool?
    var sparkle_public_key: String?
    /// Whether the server signs uploads (it keeps the private key); false: `sign_update`'s signature is required.
    var server_signs_updates: Bool?

    init(_ product: Product, sdkKey: String? = nil) {
        tenant_id = product.tenantId
        id = product.id
        name = product.name
        key_prefix = product.keyPrefix
        trial_duration_days = product.trialDurationDays
        free_tier_enabled = product.freeTierEnabled
        portal_enabled = product.portalEnabled
        sdk_key_required = product.sdkKeyRequired
        appstore_bundle_id = product.appStoreBundleId
        appstore_environments = product.acceptedAppStoreEnvironments
        sdk_key = sdkKey
    }

    init(_ product: Product, updates: ProductUpdateSettings?) {
        self.init(product)
        public_feed = updates?.publicFeed
        sparkle_public_key = updates?.sparklePublicKey
        server_signs_updates = updates?.serverSigns
    }
}

struct KeyTypeBody: Encodable {
    var id: String
    var product_id: String
    var display_name: String
    var activation_limit: Int
    @ExplicitNull var duration_days: Int?
    var fallback_access: Bool
    var lease_ttl_seconds: Int64
    var entitlements: [String]
    @ExplicitNull var stripe_price_id: String?
    @ExplicitNull var stripe_mode: String?
    var offline_lease_days: Int
    var floating: Bool
    var heartbeat_seconds: Int
    var overage: Double
    @ExplicitNull var updates_days: Int?
    @ExplicitNull var paddle_price_id: String?
    @ExplicitNull var lemonsqueezy_variant_id: String?
    @ExplicitNull var polar_product_id: String?
    @ExplicitNull var appstore_product_id: String?
    var expires_from: String

    init(_ keyType: KeyType) {
        expires_from = (keyType.expiresFrom ?? .purchase).rawValue
        id = keyType.id
        product_id = keyType.productId
        display_name = keyType.displayName
        activation_limit = keyType.activationLimit
        duration_days = keyType.durationDays
        fallback_access = keyType.fallbackAccess
        lease_ttl_seconds = keyType.leaseTtlSeconds
        entitlements = keyType.entitlementCodes
        stripe_price_id = keyType.stripePriceId
        stripe_mode = keyType.stripeMode
        paddle_price_id = keyType.paddlePriceId
        lemonsqueezy_variant_id = keyType.lemonSqueezyVariantId
        polar_product_id = keyType.polarProductId
        appstore_product_id = keyType.appStoreProductId
        offline_lease_days = keyType.offlineLeaseDays
        floating = keyType.floating
        heartbeat_seconds = keyType.heartbeatSeconds
        overage = Double(keyType.overagePercent) / 100
        updates_days = keyType.updatesDays
    }
}

struct LicensePage: Encodable {
    var licenses: [LicenseBody]
    @ExplicitNull var next_cursor: String?
}

struct SigningKeyBody: Encodable {
    var kid: String
    var public_key: String
    var status: String?
    var created_at: Int64?
    /// In the server-wide listing only.
    var tenant_id: String?
}

/// `POST /admin/v1/signing-keys/rotate`: what each tenant signs with now; `kid` and `public_key`
/// (protocol section 4) are the first tenant's, the only one's on a single-tenant server.
struct ServerRotationBody: Encodable {
    struct TenantRotation: Encodable {
        var tenant_id: String
        var kid: String
        var public_key: String
        /// True when the tenant's prepared `next` key was promoted instead of the new key.
        var prepared: Bool
    }

    var kid: String
    var public_key: String
    var tenants: [TenantRotation]
}

struct AuditPage: Encodable {
    var entries: [AuditEntryBody]
    @ExplicitNull var next_cursor: String?
}

struct AuditEntryBody: Encodable {
    var id: Int64
    var at: Int64
    var actor: String
    var action: String
    var tenant_id: String?
    var target: String?
    var details: String
    /// `user`, `token`, `provider`, `customer` or `system`; the user's or token's id; where the
    /// request came from (users and tokens).
    var actor_kind: String
    var actor_id: String?
    var actor_address: String?
    var actor_user_agent: String?

    init(_ entry: AuditEntry) {
        actor_kind = entry.actorKind ?? AuditActor.kind(of: entry.actor).rawValue
        actor_id = entry.actorId
        actor_address = entry.actorAddress
        actor_user_agent = entry.actorUserAgent
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

struct WebhookEndpointBody: Encodable {
    var id: String
    var url: String
    var events: [String]
    var enabled: Bool
    @ExplicitNull var disabled_reason: String?
    var created_at: Int64
    /// Only when the endpoint is created.
    var secret: String?

    init(_ endpoint: WebhookEndpoint, secret: String? = nil) {
        id = endpoint.id
        url = endpoint.url
        events = endpoint.eventTypes.map(\.rawValue)
        enabled = endpoint.enabled
        disabled_reason = endpoint.disabledReason
        created_at = endpoint.createdAt
        self.secret = secret
    }
}

struct WebhookDeliveryBody: Encodable {
    var id: String
    var endpoint_id: String
    var event_id: String
    var event_type: String
    var status: String
    var attempts: Int
    @ExplicitNull var next_attempt_at: Int64?
    @ExplicitNull var last_attempt_at: Int64?
    @ExplicitNull var last_status_code: Int?
    @ExplicitNull var last_error: String?
    var created_at: Int64
    @ExplicitNull var finished_at: Int64?

    init(_ delivery: WebhookDelivery) {
        id = delivery.id
        endpoint_id = delivery.endpointId
        event_id = delivery.eventId
        event_type = delivery.eventType
        status = delivery.status.rawValue
        attempts = delivery.attempts
        next_attempt_at = delivery.status == .pending ? delivery.nextAttemptAt : nil
        last_attempt_at = delivery.lastAttemptAt
        last_status_code = delivery.lastStatusCode
        last_error = delivery.lastError
        created_at = delivery.createdAt
        finished_at = delivery.finishedAt
    }
}

/// A received payment event (`GET …/stripe/events`, `GET …/{provider}/events`): Stripe's and the
/// merchants' in one shape; `event_created` only where the provider dates its events (Stripe).
struct PaymentEventBody: Encodable {
    var event: any ReceivedPaymentEvent

    enum CodingKeys: String, CodingKey {
        case id, type, outcome, attempts, event_created, received_at, updated_at, retryable
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(event.id, forKey: .id)
        try c.encode(event.type, forKey: .type)
        try c.encode(event.outcome, forKey: .outcome)
        try c.encode(event.attempts, forKey: .attempts)
        if let created = event.providerCreatedAt { try c.encode(created, forKey: .event_created) }
        try c.encode(event.receivedAt, forKey: .received_at)
        try c.encode(event.updatedAt, forKey: .updated_at)
        try c.encode(event.retryable, forKey: .retryable)
    }
}

/// A tenant's settings for a merchant of record (`GET`/`PUT …/{paddle|lemonsqueezy|polar}`):
/// never a secret, only whether one is stored.
struct MerchantSettingsBody: Encodable {
    var provider: String
    /// Where the provider is to send its webhooks (a path: the host is the server's public one).
    var webhook_path: String
    var webhook_secret_set = true
    /// Paddle only.
    var api_key_set: Bool?
    var environment: String?
    /// Lemon Squeezy only.
    var accept_test_mode: Bool?
    var updated_at: Int64

    init(_ settings: MerchantSettings, provider: MerchantProvider, tenantId: String) {
        self.provider = provider.rawValue
        webhook_path = "/\(provider.rawValue)/webhook/\(tenantId)"
        if provider == .paddle {
            api_key_set = settings.sealedAPIKey != nil
            environment = settings.environment ?? "production"
        }
        if provider == .lemonSqueezy { accept_test_mode = settings.acceptTestMode }
        updated_at = settings.updatedAt
    }
}

