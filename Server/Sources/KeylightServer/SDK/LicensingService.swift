import Crypto
import Foundation
import KeylightCore
import KeylightSigning
import Logging

/// The SDK API's behaviour (protocol section 2), independent of HTTP.
final class LicensingService: Sendable {
    let database: Database
    let keyRing: KeyRing
    let clock: any WallClock
    let activity: ActivityBuffer
    let metrics: ServerMetrics
    let licenseLimiter: RateLimiter<String>
    private let products = TTLCache<String, Product>(ttl: 5)
    private let configs = TTLCache<String, SignedProductConfig>(ttl: 60)

    /// How long a signed config stays valid for the app.
    static let configLifetime: Int64 = 7 * 86_400

    init(database: Database, keyRing: KeyRing, clock: any WallClock, activity: ActivityBuffer, metrics: ServerMetrics, licenseLimit: RateLimit) {
        self.database = database
        self.keyRing = keyRing
        self.clock = clock
        self.activity = activity
        self.metrics = metrics
        self.licenseLimiter = RateLimiter(limit: licenseLimit, clock: clock)
    }

    // MARK: Product and SDK key

    /// The product named in the path, after checking the SDK key: 401 without a key, 404 for an
    /// unknown tenant or product, 401 for a wrong key (compared as SHA-256 digests, in constant time).
    /// The product an SDK request is for, once its SDK key is right. A request without the header
    /// is served only by a product with `sdk_key_required` off (protocol 6.7), and is 401 wherever
    /// the product is unknown, so that leaving the key out tells nothing about which products
    /// exist. A header that is present must be right.
    func authorizedProduct(tenantId: String, productId: String, sdkKey: String?) async throws -> Product {
        if let sdkKey, sdkKey.isEmpty || sdkKey.utf8.count > 256 { throw APIError.unauthorized }
        guard TenantPath.isValidId(tenantId), !TenantPath.reserved.contains(tenantId), TenantPath.isValidId(productId) else {
            throw sdkKey == nil ? APIError.unauthorized : APIError.notFound("Product")
        }
        let cacheKey = tenantId + "/" + productId
        let product: Product
        if let cached = products.value(for: cacheKey) {
            product = cached
        } else {
            guard let loaded = try await database.product(tenantId: tenantId, id: productId) else {
                throw sdkKey == nil ? APIError.unauthorized : APIError.notFound("Product")
            }
            products.set(loaded, for: cacheKey)
            product = loaded
        }
        guard let sdkKey else {
            guard !product.sdkKeyRequired else { throw APIError.unauthorized }
            return product
        }
        let presented = Hex.encode(SHA256.hash(data: Data(sdkKey.utf8)))
        guard ConstantTime.equals(presented, product.sdkKeyHash) else { throw APIError.unauthorized }
        return product
    }

    func forgetProduct(tenantId: String, productId: String) {
        products.remove(tenantId + "/" + productId)
    }

    func limitLicense(_ key: LicenseKey) throws(APIError) {
        if case .limited(let retryAfter) = licenseLimiter.acquire(key.keyHash) {
            throw .rateLimited(retryAfter: retryAfter)
        }
    }

    // MARK: Actions

    func activate(_ request: SDKBody<ActivateRequest>, product: Product) async throws -> ActivateResponse {
        let body = request.fields
        let key = try Field.licenseKey(body.license_key)
        // Cut, not refused (protocol 6.8): the hosted C# client names a device by its whole OS description.
        let name = try Field.required(body.instance_name.map { Field.cut($0, maxBytes: 256) }, "instance_name", max: 256)
        let machineHash = try Field.optional(body.machine_hash, "machine_hash", max: 128)
        let freeTierId = try Field.optionalIdentifier(body.free_tier_instance_id, "free_tier_instance_id")
        let existingId = try Field.optionalIdentifier(body.instance_id, "instance_id")
        try limitLicense(key)
        let now = clock.unixSeconds
        let (instanceId, grant) = try await activateInstance(
            keyHash: key.keyHash, product: product, name: name, machineHash: machineHash, existingId: existingId,
            freeTierId: freeTierId, deviceKey: nil, change: .app, now: now, telemetry: request.telemetry
        )
        return ActivateResponse(
            instanceId: instanceId, licenseExpiresAt: grant.expiresAt,
            lease: try await lease(for: grant, tenantId: product.tenantId, instanceId: instanceId, now: now), seat: SeatReport(grant),
            summary: LicenseSummary(grant)
        )
    }

    /// Takes a slot (or finds the machine's own) under the cap, for the app, an offline request
    /// or the portal. A full license is a 409 that lists the devices holding the slots
    /// (protocol 6.3: the key is the customer's proof of ownership), so the app can offer to free one.
    func activateInstance(
        keyHash: String, product: Product, name: String, machineHash: String?, existingId: String?,
        freeTierId: String?, deviceKey: String?, change: InstanceChange, now: Int64, telemetry: Telemetry? = nil
    ) async throws -> (instanceId: String, grant: LicenseGrant) {
        var attempt = 0
        let newInstanceId = RandomUUID.lowercaseString()
        while true {
            attempt += 1
            let outcome: ActivationOutcome
            do {
                outcome = try await database.activate(
                    keyHash: keyHash, tenantId: product.tenantId, productId: product.id,
                    newInstanceId: newInstanceId, name: name, machineHash: machineHash,
                    existingInstanceId: existingId, freeTierInstanceId: freeTierId, now: now, deviceKey: deviceKey, change: change,
                    refusal: { grant in LicenseRules.refusal(grant, now: now, activating: true, offline: deviceKey != nil) }
                )
            } catch where StorageError.isUniqueViolation(error) && attempt == 1 {
                // The same machine activated concurrently and won the race: the retry finds its instance.
                continue
            }
            switch outcome {
            case .licenseNotFound:
                metrics.recordActivation("not_found")
                throw try await unknownKey(keyHash, product: product)
            case .refused(var refusal, let grant):
                metrics.recordActivation("refused")
                if refusal == .licenseExpired {
                    // Said with a signed `expired` lease, as validate says it (protocol 6.7).
                    let lease = try await lease(for: grant, tenantId: product.tenantId, instanceId: grant.instanceId ?? newInstanceId, now: now)
                    refusal.extraFields = ExpiredActivation(licenseExpiresAt: grant.expiresAt, lease: lease).jsonBytes
                }
                throw refusal
            case .limitReached:
                metrics.recordActivation("limit_reached")
                var error = APIError.activationLimitReached
                if let seats = try? await seats(keyHash: keyHash, product: product) {
                    error.extraFields = seats.jsonBytes
                }
                throw error
            case .activated(let instanceId, let grant), .existing(let instanceId, let grant):
                if case .activated = outcome {
                    metrics.recordActivation("activated")
                    activity.activated(tenantId: product.tenantId, productId: product.id, at: now, instanceId: instanceId, telemetry: telemetry)
                } else {
                    metrics.recordActivation("existing")
                    if let telemetry { activity.reactivated(tenantId: product.tenantId, productId: product.id, at: now, instanceId: instanceId, telemetry: telemetry) }
                }
                return (instanceId, grant)
            }
        }
    }

    func validate(_ request: SDKBody<ValidateRequest>, product: Product) async throws -> ValidateResponse {
        let body = request.fields
        let key = try Field.licenseKey(body.license_key)
        let instanceId = try Field.identifier(body.instance_id, "instance_id")
        let machineHash = try Field.optional(body.machine_hash, "machine_hash", max: 128)
        try limitLicense(key)
        let now = clock.unixSeconds
        guard var grant = try await database.grant(keyHash: key.keyHash, tenantId: product.tenantId, productId: product.id, instanceId: instanceId) else {
            metrics.recordValidation("not_found")
            throw try await unknownKey(key.keyHash, product: product)
        }
        if let refusal = LicenseRules.refusal(grant, now: now, activating: false) {
            metrics.recordValidation("refused")
            throw refusal
        }
        // Protocol 6.1: an unknown instance, a deactivated one, and one presented from another machine
        // are all "not an active instance here" (422), a verdict the SDK acts on; 404 stays for
        // configuration errors (tenant, product, route, license).
        guard grant.instanceId != nil, grant.instanceActive == true,
              machineHash == nil || grant.instanceMachineHash == nil || machineHash == grant.instanceMachineHash else {
            metrics.recordValidation("refused")
            throw APIError.instanceInactive
        }
        if grant.floating {
            // The heartbeat is written before the lease is signed: a lease is never issued for a
            // seat the sweep has already given to someone else.
            guard let inUse = try await database.holdSeat(
                licenseId: grant.licenseId, tenantId: product.tenantId, instanceId: instanceId, heartbeat: grant.heartbeatSeconds, now: now
            ) else {
                metrics.recordValidation("refused")
                throw APIError.instanceInactive
            }
            grant.activeInstances = inUse
        }
        let lease = try await lease(for: grant, tenantId: product.tenantId, instanceId: instanceId, now: now, ttl: LicenseRules.validationLeaseTTL(grant))
        activity.validated(instanceId: instanceId, tenantId: product.tenantId, productId: product.id, at: now, telemetry: request.telemetry)
        metrics.recordValidation(lease.status == .active ? "valid" : lease.status.rawValue)
        return ValidateResponse(
            valid: lease.status != .expired, licenseExpiresAt: grant.expiresAt, lease: lease,
            config: try await config(for: product, now: now), seat: SeatReport(grant), summary: LicenseSummary(grant)
        )
    }

    /// Frees an instance. With the license key, both must match; without it, or with `""` (the
    /// hosted C++ and C# clients, protocol 6.7 and 6.8), the instance id alone decides: it is a
    /// random value only its device holds.
    func deactivate(_ body: DeactivateRequest, product: Product) async throws -> DeactivateResponse {
        let instanceId = try Field.identifier(body.instance_id, "instance_id")
        let key = try body.license_key.flatMap { $0.isEmpty ? nil : $0 }.map { text throws(APIError) in try Field.licenseKey(text) }
        if let key {
            try limitLicense(key)
        } else if case .limited(let retryAfter) = licenseLimiter.acquire("instance:" + instanceId) {
            throw APIError.rateLimited(retryAfter: retryAfter)
        }
        switch try await releaseSeat(keyHash: key?.keyHash, instanceId: instanceId, product: product, change: .app) {
        case .licenseNotFound:
            guard let key else { throw APIError.notFound("Instance") }
            throw try await unknownKey(key.keyHash, product: product)
        case .instanceNotFound: throw APIError.notFound("Instance")
        case .deactivated, .alreadyInactive: return DeactivateResponse()
        case .invalidProof: throw APIError.offlineDeviceNeedsProof
        }
    }

    /// Frees an instance of `product` whose device can be freed by its key alone (not one
    /// activated offline: ``LicenseRules/onlineOnly``), for the app and the customer portal. With
    /// `keyHash` nil the instance alone names its license.
    func releaseSeat(keyHash: String?, instanceId: String, product: Product, change: InstanceChange) async throws -> DeactivationOutcome {
        try await database.deactivate(
            keyHash: keyHash, licenseId: nil, tenantId: product.tenantId, productId: product.id, instanceId: instanceId,
            now: clock.unixSeconds, change: change, proof: LicenseRules.onlineOnly
        )
    }

    /// Frees any instance of the license, offline ones too: for the developer (admin API,
    /// dashboard), who answers for their customers' seats.
    func freeSeat(licenseId: String, tenantId: String, productId: String, instanceId: String, change: InstanceChange) async throws -> DeactivationOutcome {
        try await database.deactivate(
            keyHash: nil, licenseId: licenseId, tenantId: tenantId, productId: productId, instanceId: instanceId, now: clock.unixSeconds, change: change
        )
    }

    func keyless(_ request: SDKBody<KeylessRequest>, product: Product) async throws -> KeylessResponse {
        let body = request.fields
        let instanceId = try Field.identifier(body.instance_id, "instance_id")
        let state = try Field.required(body.state, "state", max: 16)
        guard KeylessRequest.states.contains(state) else { throw APIError.invalidRequest("Field state must be trial, free_tier or expired.") }
        let machineHash = try Field.optional(body.machine_hash, "machine_hash", max: 128)
        let now = clock.unixSeconds
        activity.sawKeyless(
            KeylessInstall(tenantId: product.tenantId, productId: product.id, instanceId: instanceId),
            KeylessSighting(state: state, machineHash: machineHash, at: now, telemetry: request.telemetry)
        )
        return KeylessResponse(config: try await config(for: product, now: now))
    }

    /// The product's signed config (cfg1), re-signed at most once a minute per product and key.
    func config(for product: Product, now: Int64) async throws -> SignedProductConfig {
        let key = try await signingKey(tenantId: product.tenantId)
        let cacheKey = "\(product.tenantId)/\(product.id)/\(key.kid)/\(product.trialDurationDays)/\(product.freeTierEnabled)"
        if let cached = configs.value(for: cacheKey) { return cached }
        let signed = ProductConfig(
            tenantId: product.tenantId, productId: product.id, trialDurationDays: product.trialDurationDays,
            freeTierEnabled: product.freeTierEnabled, issuedAt: now, expiresAt: now + Self.configLifetime
        ).signed(with: key)
        configs.set(signed, for: cacheKey)
        return signed
    }

    /// The error for a key no license has: 422 `LICENSE_REVOKED` for a key a remint replaced (a
    /// verdict the SDK acts on), else 404 (which clients treat as a configuration error).
    func unknownKey(_ keyHash: String, product: Product) async throws -> APIError {
        try await database.isReplacedKey(keyHash, tenantId: product.tenantId, productId: product.id)
            ? APIError(status: .unprocessableContent, code: "LICENSE_REVOKED", message: "This license key was replaced; use the new key.")
            : APIError.notFound("License")
    }

    /// The key that signs for `tenantId` now (protocol 6.2: each tenant signs with its own).
    func signingKey(tenantId: String) async throws -> SigningKey {
        guard let keys = try await keyRing.keys(for: tenantId) else { throw APIError.notFound("Tenant") }
        return keys.active
    }

    // MARK: Leases

    /// The lease ``LicenseRules`` give `grant`, signed with the tenant's active key; `ttl`
    /// defaults to the key type's online lease.
    func lease(for grant: LicenseGrant, tenantId: String, instanceId: String, now: Int64, ttl: Int64? = nil) async throws -> Lease {
        let key = try await signingKey(tenantId: tenantId)
        return try LicenseRules.lease(for: grant, instanceId: instanceId, now: now, ttl: ttl ?? grant.onlineLeaseTTL, key: key)
    }
}
