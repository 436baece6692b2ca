import Crypto
import Foundation
import KeylightCore
import KeylightSigning

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

    // MARK: Licenses

    /// Mints a license; the raw key is returned here only.
    func createLicense(tenantId: String, productId: String, _ body: CreateLicenseRequest, actor: AuditActor) async throws -> (License, key: LicenseKey) {
        let product = try await requireProduct(tenantId: tenantId, productId: productId)
        let keyTypeId = try Field.pathId(body.key_type_id, "key_type_id")
        guard let keyType = try await database.keyType(tenantId: tenantId, productId: productId, id: keyTypeId) else {
            throw APIError.notFound("Key type")
        }
        let email = try Field.email(body.customer_email)
        let now = clock.unixSeconds
        // Dates given explicitly (an import, a reseller's own terms) date the license now; else
        // the key type's terms do, from now or from its first activation.
        let datedByCaller = body.expires_at != nil || body.updates_until != nil
        let terms = keyType.mintDates(now: now)
        let expiresAt = body.expires_at ?? (datedByCaller ? keyType.durationDays.map { now + Int64($0) * 86_400 } : terms.expiresAt)
        if let expiresAt, expiresAt < 0 || expiresAt > Field.latestDate { throw APIError.invalidRequest("Field expires_at is out of range.") }
        // An imported license keeps the updates its customer bought elsewhere; a new one gets its key type's.
        let updatesUntil = body.updates_until ?? (datedByCaller ? keyType.updatesDays.map { now + Int64($0) * 86_400 } : terms.updatesUntil)
        if let updatesUntil, updatesUntil < 0 || updatesUntil > Field.latestDate { throw APIError.invalidRequest("Field updates_until is out of range.") }
        let key: LicenseKey
        if let imported = body.license_key {
            // A key from the hosted service (protocol 6.1), kept as it is so shipped apps keep working.
            let text = try Field.required(imported, "license_key", max: LicenseKey.importedLengths.upperBound)
            guard LicenseKey.isImportable(text, prefix: product.keyPrefix), let parsed = try? LicenseKey(text) else {
                throw APIError.invalidRequest("Field license_key must be 8-64 characters of A-Z 0-9 - starting with the product prefix \(product.keyPrefix).")
            }
            key = parsed
        } else {
            key = try LicenseKey.generate(prefix: product.keyPrefix)
        }
        var mail: MailRequest?
        if body.send_email == true {
            guard mailBuyers else { throw APIError.mailNotConfigured }
            guard let email else { throw APIError.invalidRequest("Field send_email needs customer_email.") }
            mail = MailRequest(kind: .license, to: email)
        }
        var license = License(
            id: UUID().uuidString.lowercased(), tenantId: tenantId, productId: productId, keyTypeId: keyTypeId,
            keyHash: key.keyHash, maskedKey: key.masked(keepingPrefix: product.keyPrefix), status: .active, expiresAt: expiresAt, customerEmail: email,
            activeInstances: 0, createdAt: now, updatedAt: now, updatesUntil: updatesUntil
        )
        if !datedByCaller { license.waitForFirstActivation(keyType, subscription: false) }
        do {
            try await database.insertLicense(license, key: key.text, sealedKey: try LicenseKeySeal.seal(key, licenseId: license.id, with: sealer), mail: mail, actor: actor)
        } catch where StorageError.isUniqueViolation(error) {
            throw APIError.conflict("That license key is already in use.")
        }
        return (license, key)
    }

    func license(tenantId: String, productId: String, id: String) async throws -> License {
        guard let license = try await database.license(tenantId: tenantId, productId: productId, id: id) else { throw APIError.notFound("License") }
        return license
    }

    func licensePage(tenantId: String, productId: String, _ query: LicenseQuery) async throws -> ([License], next: String?) {
        _ = try await requireProduct(tenantId: tenantId, productId: productId)
        let rows = try await database.licenses(
            tenantId: tenantId, productId: productId, email: query.email, status: query.status, keySuffix: query.keySuffix,
            keyTypeId: query.keyTypeId, metadata: query.metadata, afterId: query.afterId, limit: query.limit + 1
        )
        let page = Array(rows.prefix(query.limit))
        let next = rows.count > query.limit ? page.last.map { LicenseQuery.cursor(after: $0.id) } : nil
        return (page, next)
    }

    func setStatus(tenantId: String, productId: String, id: String, to status: LicenseStatus, action: String, actor: AuditActor) async throws -> License {
        guard let license = try await database.setLicenseStatus(tenantId: tenantId, productId: productId, id: id, status: status, action: action, now: clock.unixSeconds, actor: actor) else {
            throw APIError.notFound("License")
        }
        return license
    }

    /// A new key for the same license; the old key stops working at once.
    func remint(tenantId: String, productId: String, id: String, actor: AuditActor) async throws -> (License, key: LicenseKey) {
        let product = try await requireProduct(tenantId: tenantId, productId: productId)
        let key = try LicenseKey.generate(prefix: product.keyPrefix)
        // The new key is sealed too: a resend after a remint mails the key that works.
        let sealed = try LicenseKeySeal.seal(key, licenseId: id, with: sealer)
        guard let license = try await database.remintLicense(tenantId: tenantId, productId: productId, id: id, keyHash: key.keyHash, maskedKey: key.masked, sealedKey: sealed, now: clock.unixSeconds, actor: actor) else {
            throw APIError.notFound("License")
        }
        return (license, key)
    }

    /// Queues the license's key mail again, to `customer_email` when given (it replaces the
    /// license's address, audited) or to the address on file. A license minted before keys were
    /// kept sealed cannot be mailed (409 `KEY_NOT_RECOVERABLE`: remint it).
    /// Mails a license's key again. To the address on file needs `licenses:mail`; to another
    /// address (which becomes the one on file) also `licenses:write`, so support cannot send a
    /// key wherever it likes.
    func resendEmail(tenantId: String, productId: String, id: String, _ body: ResendEmailRequest, by principal: Principal) async throws -> (License, to: String) {
        let actor = principal.actor
        var license = try await license(tenantId: tenantId, productId: productId, id: id)
        let corrected = try Field.email(body.customer_email)
        if let corrected, corrected != license.customerEmail {
            try authorize(principal, .licensesWrite, tenantId: tenantId, productId: productId)
        }
        guard mailBuyers else { throw APIError.mailNotConfigured }
        guard let to = corrected ?? license.customerEmail else { throw APIError.invalidRequest("The license has no customer_email: give one.") }
        // An address on file came from a payment provider: it may not be one mail can go to.
        guard (try? MailAddress(to)) != nil else { throw APIError.invalidRequest("The license's address (\(to.prefix(80).debugDescription)) cannot receive mail: give customer_email.") }
        guard try await database.sealedKey(licenseId: license.id) != nil else {
            throw APIError(status: .conflict, code: "KEY_NOT_RECOVERABLE", message: "This license was minted before keys were kept sealed, so its key cannot be mailed again; remint it to mail a new key.")
        }
        let now = clock.unixSeconds
        if let corrected, corrected != license.customerEmail {
            license = try await database.setCustomerEmail(licenseId: license.id, tenantId: tenantId, to: corrected, now: now, actor: actor) ?? license
        }
        try await database.enqueueLicenseMail(tenantId: tenantId, licenseId: license.id, to: to, now: now, actor: actor)
        return (license, to)
    }

    func deactivateInstance(tenantId: String, productId: String, licenseId: String, instanceId: String, actor: AuditActor) async throws {
        switch try await licensing.freeSeat(licenseId: licenseId, tenantId: tenantId, productId: productId, instanceId: instanceId, change: InstanceChange(actor: actor, how: .admin)) {
        case .licenseNotFound: throw APIError.notFound("License")
        case .instanceNotFound: throw APIError.notFound("Instance")
        case .deactivated, .alreadyInactive: return
        case .invalidProof: throw APIError.internalError  // no proof was asked for
        }
    }

    // MARK: Stripe and signing keys

    func setStripe(tenantId: String, _ body: StripeSettingsRequest, actor: AuditActor) async throws {
        _ = try await requireTenant(tenantId)
        let webhookSecret = try Field.optional(body.webhook_secret.flatMap { $0.isEmpty ? nil : $0 }, "webhook_secret", max: 256)
        let secretKey: StripeSecretChange
        switch body.secret_key {
        case .none: secretKey = .keep
        case .some(.none): secretKey = .remove
        case .some(.some(let value)):
            if value.isEmpty {
                secretKey = .keep
            } else {
                let key = try Field.required(value, "secret_key", max: 256)
                secretKey = .set(try sealer.seal(Data(key.utf8), context: StripeSealing.secretKey(tenantId: tenantId)))
            }
        }
        guard try await database.setStripeSettings(
            tenantId: tenantId,
            sealedWebhookSecret: try webhookSecret.map { try sealer.seal(Data($0.utf8), context: StripeSealing.webhookSecret(tenantId: tenantId)) },
            secretKey: secretKey, now: clock.unixSeconds, actor: actor
        ) else {
            // The request is well formed; it conflicts with what is stored (nothing yet).
            throw APIError.conflict("Missing field webhook_secret (required until one is stored).")
        }
    }

    // MARK: Signing keys (protocol 6.2)

    /// Publishes a `next` key for the tenant, to ship in the app before it signs anything; a
    /// second call returns the key already prepared.
    func prepareSigningKey(tenantId: String, actor: AuditActor) async throws -> SigningKeyRow {
        _ = try await requireTenant(tenantId)
        return try await keyRing.prepare(tenantId: tenantId, actor: actor)
    }

    /// Rotates one tenant (or every tenant, `tenantId` nil): its prepared `next` key, else a new
    /// key of its own, signs from now on; responses are signed under it at once (a new intermediate
    /// key). At least one outcome, in tenant id order; 409 when there is no tenant to rotate.
    /// With `expected_next_kid`, the rotation happens only if that is the key staged (prepared)
    /// for each tenant rotated; else 409 `STAGED_KEY_MISMATCH` and nothing changes. A retried
    /// rotation so cannot promote a second key.
    func rotateSigningKeys(tenantId: String?, _ body: RotateSigningKeysRequest? = nil, actor: AuditActor) async throws -> [RotationOutcome] {
        let tenantIds = if let tenantId { [try await requireTenant(tenantId).id] } else { try await database.tenants().map(\.id) }
        guard !tenantIds.isEmpty else { throw APIError.conflict("There is no tenant to rotate; each tenant gets its first key when it is created.") }
        let expected = try Field.optional(body?.expected_next_kid, "expected_next_kid", max: 64)
        let outcomes: [RotationOutcome]
        do {
            outcomes = try await keyRing.rotate(tenantIds: tenantIds, expectedNextKid: expected, actor: actor)
        } catch let mismatch as StagedKeyMismatch {
            var error = APIError(
                status: .conflict, code: "STAGED_KEY_MISMATCH",
                message: "Tenant \(mismatch.tenantId)'s staged key is \(mismatch.stagedKid ?? "none"), not \(expected ?? ""): nothing was rotated. Read the keys again before rotating."
            )
            error.extraFields = Array((try? JSONSerialization.data(withJSONObject: ["staged_kid": mismatch.stagedKid.map { $0 as Any } ?? NSNull()])) ?? Data())
            throw error
        }
        try await signer.refresh()
        return outcomes
    }

    /// Retires `kid` for one tenant, or for every tenant that has it (`tenantId` nil).
    func retireSigningKey(kid: String, tenantId: String?, actor: AuditActor) async throws {
        if let tenantId { _ = try await requireTenant(tenantId) }
        guard SigningKey.isValidKid(kid) else { throw APIError.notFound("Signing key") }
        switch try await keyRing.retire(kid: kid, tenantId: tenantId, actor: actor) {
        case .retired, .alreadyRetired: return
        case .notFound: throw APIError.notFound("Signing key")
        case .active: throw APIError.conflict("The signing key that signs now cannot be retired; rotate first.")
        }
    }

    /// `prefix` + 32 random bytes, URL-safe base64: SDK keys, admin tokens.
    static func newSecret(prefix: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return prefix + Base64.encodeURLSafe(bytes)
    }
}
