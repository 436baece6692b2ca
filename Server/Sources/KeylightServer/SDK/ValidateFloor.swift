import KeylightCore
import KeylightSigning

/// The parts of a validate that no glue around them can remove, each callable on its own, for
/// `keylight-bench server`'s `floor` phase (issue 52): the license read validate makes
/// (`Database.grant`, on the kept point-read connections), one Ed25519 signature of the lease's
/// signed payload (what ``LicenseRules`` signs for every validate), and the answer's JSON
/// (``ValidateResponse``). SPI for the benchmark (`@_spi(Benchmarks) import KeylightServer`),
/// not part of the server's API.
@_spi(Benchmarks)
public struct ValidateFloor: Sendable {
    let database: Database
    let keyHash: String
    let tenantId: String
    let productId: String
    let instanceId: String
    let key: SigningKey
    let grant: LicenseGrant
    let lease: Lease
    /// The lease's signed payload, built once: the signature alone is timed.
    let payload: [UInt8]
    let config: SignedProductConfig

    /// Reads the license and its instance once, and builds what validate would answer for them
    /// at `now`, signed with a new key (a tenant's key signs no faster).
    public init(database: Database, licenseKey: String, instanceId: String, tenantId: String, productId: String, now: Int64) async throws {
        let keyHash = try LicenseKey(licenseKey).keyHash
        guard let grant = try await database.grant(keyHash: keyHash, tenantId: tenantId, productId: productId, instanceId: instanceId),
              let product = try await database.product(tenantId: tenantId, id: productId) else {
            throw APIError.notFound("License")
        }
        let key = try SigningKey.generate()
        let lease = try LicenseRules.lease(for: grant, instanceId: instanceId, now: now, ttl: LicenseRules.validationLeaseTTL(grant), key: key)
        self.database = database
        self.keyHash = keyHash
        self.tenantId = tenantId
        self.productId = productId
        self.instanceId = instanceId
        self.key = key
        self.grant = grant
        self.lease = lease
        self.payload = lease.signedPayload
        self.config = ProductConfig(
            tenantId: tenantId, productId: productId, trialDurationDays: product.trialDurationDays,
            freeTierEnabled: product.freeTierEnabled, issuedAt: now, expiresAt: now + LicensingService.configLifetime
        ).signed(with: key)
    }

    /// The read validate makes; answers whether it found the license.
    public func readLicense() async throws -> Bool {
        try await database.grant(keyHash: keyHash, tenantId: tenantId, productId: productId, instanceId: instanceId) != nil
    }

    /// One Ed25519 signature of the lease's signed payload; answers its length (64).
    public func signLease() -> Int {
        key.signature(for: payload).count
    }

    /// The answer validate writes for this license, as bytes; answers their count.
    public func encodeAnswer() -> Int {
        ValidateResponse(
            valid: lease.status != .expired, licenseExpiresAt: grant.expiresAt, lease: lease,
            config: config, seat: SeatReport(grant), summary: LicenseSummary(grant)
        ).jsonBytes.count
    }
}
