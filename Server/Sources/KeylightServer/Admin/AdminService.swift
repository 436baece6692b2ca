import Crypto
import Foundation
import KeylightCore

/// Administration (protocol section 4), shared by the admin API and the dashboard. Every
/// change is written to the audit log in its own transaction.
final class AdminService: Sendable {
    let database: Database
    let keyRing: KeyRing
    let sealer: SecretSealer
    /// Whether this server mails buyers (SMTP configured): licenses from payments and with
    /// `send_email` queue their key's mail.
    /// The server's sender when it mails buyers (`--smtp-url`, `--mail-from`); nil: it does not.
    let mailFrom: MailAddress?
    /// `--public-url`, for links in mails.
    let publicURL: String?
    var mailBuyers: Bool { mailFrom != nil }
    let clock: any WallClock
    let licensing: LicensingService
    let signer: ResponseSigner
    /// The insights (devices, trial funnel, quiet licenses) the API and the dashboard show.
    let insights: InsightsService
    /// Which webhook endpoint addresses are accepted (literal addresses are checked at
    /// registration, names at every delivery).
    let addressPolicy: AddressPolicy

    init(database: Database, keyRing: KeyRing, sealer: SecretSealer, clock: any WallClock, licensing: LicensingService, signer: ResponseSigner, addressPolicy: AddressPolicy = .publicOnly, mailFrom: MailAddress? = nil, publicURL: String? = nil, insightsRetentionDays: Int64 = 90) {
        self.insights = InsightsService(database: database, clock: clock, retentionDays: insightsRetentionDays)
        self.mailFrom = mailFrom
        self.publicURL = publicURL
        self.addressPolicy = addressPolicy
        self.database = database
        self.keyRing = keyRing
        self.sealer = sealer
        self.clock = clock
        self.licensing = licensing
        self.signer = signer
    }

    static let defaultLeaseTTL: Int64 = 7 * 86_400

    // MARK: Tenants and products

    func createTenant(_ body: CreateTenantRequest, actor: AuditActor) async throws -> Tenant {
        let id = try Field.pathId(body.id, "id")
        guard !TenantPath.reservedForNewTenants.contains(id) else { throw APIError.invalidRequest("Tenant id \(id) is reserved by the server.") }
        let name = try Field.required(body.name, "name", max: 200)
        let tenant = Tenant(id: id, name: name, createdAt: clock.unixSeconds)
        // Its own signing key from the start (protocol 6.2), in the same transaction.
        let key = try keyRing.firstKeyRow(tenantId: id)
        guard try await database.insertTenant(tenant, firstSigningKey: key, actor: actor) else { throw APIError.conflict("Tenant \(id) already exists.") }
        try await keyRing.reload()
        try await signer.refresh()
        return tenant
    }

    func requireTenant(_ id: String) async throws -> Tenant {
        guard TenantPath.isValidId(id), let tenant = try await database.tenant(id: id) else { throw APIError.notFound("Tenant") }
        return tenant
    }

    func requireProduct(tenantId: String, productId: String) async throws -> Product {
        guard TenantPath.isValidId(tenantId), TenantPath.isValidId(productId),
              let product = try await database.product(tenantId: tenantId, id: productId) else { throw APIError.notFound("Product") }
        return product
    }

    /// Creates a product and its SDK key; the key is returned here only and stored as a hash.
    func createProduct(tenantId: String, _ body: CreateProductRequest, actor: AuditActor) async throws -> (Product, sdkKey: String) {
        _ = try await requireTenant(tenantId)
        let id = try Field.pathId(body.id, "id")
        guard !TenantPath.reservedProductIds.contains(id) else { throw APIError.invalidRequest("Product id \(id) is reserved by the server.") }
        let name = try Field.required(body.name, "name", max: 200)
        let prefix = try Field.required(body.key_prefix, "key_prefix", max: LicenseKey.prefixLengths.upperBound)
        guard LicenseKey.isValidPrefix(prefix) else { throw APIError.invalidRequest("Field key_prefix must be 2-8 upper-case letters or digits.") }
        let trialDays = try Field.integer(body.trial_duration_days ?? 0, "trial_duration_days", in: 0...3650)
        let sdkKey = Self.newSecret(prefix: "kl_sdk_")
        let now = clock.unixSeconds
        let product = Product(
            tenantId: tenantId, id: id, name: name, keyPrefix: prefix,
            sdkKeyHash: Hex.encode(SHA256.hash(data: Data(sdkKey.utf8))),
            trialDurationDays: trialDays, freeTierEnabled: body.free_tier_enabled ?? false, createdAt: now, updatedAt: now,
            portalEnabled: body.portal_enabled ?? true, sdkKeyRequired: body.sdk_key_required ?? true
        )
        guard try await database.insertProduct(product, actor: actor) else { throw APIError.conflict("Product \(id) already exists.") }
        return (product, sdkKey)
    }

    /// Edits a product. Which App Store app and environments mint licenses is a payment setting
    /// (sandbox purchases cost nothing): it needs `payments:write` besides `products:write`.
    func updateProduct(tenantId: String, productId: String, _ body: UpdateProductRequest, by principal: Principal) async throws -> Product {
        if body.appstore_bundle_id != nil || body.appstore_environments != nil {
            try authorize(principal, .paymentsWrite, tenantId: tenantId, productId: productId)
        }
        let actor = principal.actor
        let name = try body.name.map { name throws(APIError) in try Field.required(name, "name", max: 200) }
        if let days = body.trial_duration_days { _ = try Field.integer(days, "trial_duration_days", in: 0...3650) }
        let appStore = Database.AppStoreSettingsChange(
            bundleId: try body.appstore_bundle_id.map { try $0.map(Field.appStoreBundleId) },
            environments: try body.appstore_environments.map { try $0.map(Field.appStoreEnvironments) }
        )
        guard let product = try await database.updateProduct(
            tenantId: tenantId, id: productId, name: name, trialDurationDays: body.trial_duration_days,
            freeTierEnabled: body.free_tier_enabled, portalEnabled: body.portal_enabled,
            sdkKeyRequired: body.sdk_key_required, appStore: appStore, now: clock.unixSeconds, actor: actor
        ) else { throw APIError.notFound("Product") }
        licensing.forgetProduct(tenantId: tenantId, productId: productId)
        return product
    }

    /// Creates a key type; one that names the Stripe price selling it needs `payments:write` too.
    func createKeyType(tenantId: String, productId: String, _ body: CreateKeyTypeRequest, by principal: Principal) async throws -> KeyType {
        if body.stripe_price_id != nil {
            try authorize(principal, .paymentsWrite, tenantId: tenantId, productId: productId)
        }
        let actor = principal.actor
        _ = try await requireProduct(tenantId: tenantId, productId: productId)
        let id = try Field.pathId(body.id, "id")
        let displayName = try Field.required(body.display_name, "display_name", max: 200)
        let limit = try Field.integer(body.activation_limit, "activation_limit", in: 1...100_000)
        if let days = body.duration_days { _ = try Field.integer(days, "duration_days", in: 1...36_500) }
        guard let fallback = body.fallback_access else { throw APIError.invalidRequest("Missing field fallback_access.") }
        let ttl = try Field.integer(body.lease_ttl_seconds ?? Self.defaultLeaseTTL, "lease_ttl_seconds", in: 60...(366 * 86_400))
        let entitlements = try Field.entitlements(body.entitlements)
        let offlineDays = try Field.integer(body.offline_lease_days ?? KeyType.defaultOfflineLeaseDays, "offline_lease_days", in: 1...3_650)
        let heartbeat = try Field.integer(body.heartbeat_seconds ?? KeyType.defaultHeartbeatSeconds, "heartbeat_seconds", in: KeyType.heartbeatRange)
        let overage = try Field.overagePercent(body.overage)
        if let days = body.updates_days { _ = try Field.integer(days, "updates_days", in: 1...36_500) }
        let expiresFrom = try Field.expiresFrom(body.expires_from)
        if expiresFrom == .firstActivation, body.duration_days == nil, body.updates_days == nil {
            throw APIError.invalidRequest("Field expires_from first_activation needs duration_days or updates_days: a lifetime license has no date to start.")
        }
        var keyType = KeyType(
            tenantId: tenantId, productId: productId, id: id, displayName: displayName, activationLimit: limit,
            durationDays: body.duration_days, fallbackAccess: fallback, leaseTtlSeconds: ttl,
            entitlements: entitlements.joined(separator: ","), createdAt: clock.unixSeconds,
            stripePriceId: try Field.stripePrice(body.stripe_price_id), stripeMode: try body.stripe_mode.map(Field.stripeMode),
            offlineLeaseDays: offlineDays, floating: body.floating ?? false, heartbeatSeconds: heartbeat, overagePercent: overage,
            updatesDays: body.updates_days
        )
        keyType.expiresFrom = expiresFrom == .firstActivation ? .firstActivation : nil
        guard try await database.insertKeyType(keyType, actor: actor) else { throw APIError.conflict("Key type \(id) already exists.") }
        return keyType
    }

    /// `prefix` + 32 random bytes, URL-safe base64: SDK keys, admin tokens.
    static func newSecret(prefix: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return prefix + Base64.encodeURLSafe(bytes)
    }
}
