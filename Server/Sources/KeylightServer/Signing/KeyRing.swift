import Crypto
import Foundation
import KeylightCore
import KeylightSigning
import Logging
import NIOConcurrencyHelpers

/// Every tenant's signing keys (protocol 6.2): each tenant's active private key (decrypted in
/// memory) and its public keyset. Several processes share the keys through the database; each
/// reloads its snapshot after its own changes and periodically
/// (``PeriodicService/refreshing(_:every:logger:)``) to see others'.
public final class KeyRing: Sendable {
    /// One tenant's keys.
    public struct TenantKeys: Sendable {
        public let tenantId: String
        /// The key that signs this tenant's leases, configs and response certificates.
        public let active: SigningKey
        /// Every key with its status, retired ones included (they stay for the record).
        public let rows: [(kid: String, publicKey: String, status: SigningKeyStatus, createdAt: Int64)]
        /// The published keys (next, active, grace).
        public let keyset: Keyset
        /// `GET /{tenant}/.well-known/keylight-keys`, served as-is.
        public let documentJSON: [UInt8]

        /// The prepared key apps should ship before the next rotation, if any.
        public var next: (kid: String, publicKey: String)? {
            rows.first { $0.status == .next }.map { ($0.kid, $0.publicKey) }
        }
    }

    /// One consistent view of the keys.
    public struct Snapshot: Sendable {
        public let tenants: [String: TenantKeys]
        /// `GET /.well-known/keylight-keys.json` (first revision): every tenant's active and grace keys, once per kid.
        public let documentJSON: [UInt8]

        public subscript(tenantId: String) -> TenantKeys? { tenants[tenantId] }
    }

    let database: Database
    let sealer: SecretSealer
    let clock: any WallClock
    let logger: Logger
    private let snapshot: NIOLockedValueBox<Snapshot>
    /// Decrypted private keys by kid, so a reload opens only keys it has not seen.
    private let opened = NIOLockedValueBox<[String: SigningKey]>([:])

    init(database: Database, sealer: SecretSealer, clock: any WallClock, logger: Logger) {
        self.database = database
        self.sealer = sealer
        self.clock = clock
        self.logger = logger
        self.snapshot = NIOLockedValueBox(Snapshot(tenants: [:], documentJSON: Array(#"{"keys":[]}"#.utf8)))
    }

    /// The current view.
    public var current: Snapshot { snapshot.withLockedValue { $0 } }
    /// Whether the keys have been read (and opened) at least once.
    var isLoaded: Bool { loaded.withLockedValue { $0 } }
    private let loaded = NIOLockedValueBox(false)

    /// The keys of `tenantId`; reloads once when this process has not seen the tenant yet (another
    /// process created it moments ago). Nil only for a tenant that does not exist.
    func keys(for tenantId: String) async throws -> TenantKeys? {
        if let keys = current[tenantId] { return keys }
        // Only a tenant that exists is worth a reload: unknown ids come from outside, for free.
        guard try await database.tenant(id: tenantId) != nil else { return nil }
        try await loadCreatingIfNeeded()
        return current[tenantId]
    }

    /// Loads the keys, giving every tenant without one a key of its own (a tenant created by a
    /// server from before per-tenant keys, during a rolling upgrade).
    func loadCreatingIfNeeded() async throws {
        for tenantId in try await database.tenantsWithoutSigningKey() {
            if try await database.insertFirstSigningKey(try makeRow(tenantId: tenantId, now: clock.unixSeconds), actor: .system) {
                logger.debug("created a signing key", metadata: ["tenant": "\(tenantId)"])
            }
        }
        try await reload()
    }

    /// Re-reads every tenant's keys from the database.
    func reload() async throws {
        let rows = try await database.signingKeyRows()
        var tenants: [String: TenantKeys] = [:]
        var published: [String: KeysetDocument.Entry] = [:]
        var publishedOrder: [String] = []
        for (tenantId, tenantRows) in Dictionary(grouping: rows, by: \.tenantId) {
            guard let activeRow = tenantRows.last(where: { $0.status == .active }) else { continue }
            let active = try open(activeRow)
            var keyset = Keyset()
            var entries: [KeysetDocument.Entry] = []
            for row in tenantRows where row.status != .retired {
                guard let raw = Base64.decode(row.publicKey), let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else {
                    throw StorageError.corrupt("public key \(row.kid)")
                }
                keyset.insert(kid: row.kid, publicKey: key)
                entries.append(.init(kid: row.kid, publicKey: key, status: row.status))
                if row.status != .next, published[row.kid] == nil {
                    published[row.kid] = .init(kid: row.kid, publicKey: key, status: row.status)
                    publishedOrder.append(row.kid)
                } else if row.status == .active {
                    published[row.kid]?.status = .active
                }
            }
            tenants[tenantId] = TenantKeys(
                tenantId: tenantId, active: active,
                rows: tenantRows.map { ($0.kid, $0.publicKey, $0.status, $0.createdAt) },
                keyset: keyset, documentJSON: try Self.encode(KeysetDocument(primaryKid: active.kid, keys: entries))
            )
        }
        let global = try Self.encode(KeysetDocument(keys: publishedOrder.sorted().compactMap { published[$0] }))
        snapshot.withLockedValue { $0 = Snapshot(tenants: tenants, documentJSON: global) }
        loaded.withLockedValue { $0 = true }
    }

    /// Gives a new tenant its own first key, inside the transaction that creates the tenant.
    func firstKeyRow(tenantId: String) throws -> SigningKeyRow {
        try makeRow(tenantId: tenantId, now: clock.unixSeconds)
    }

    /// Publishes a `next` key for the tenant (or returns the one already prepared).
    func prepare(tenantId: String, actor: AuditActor) async throws -> SigningKeyRow {
        let row = try await database.prepareSigningKey(try makeRow(tenantId: tenantId, now: clock.unixSeconds), actor: actor)
        try await reload()
        return row
    }

    /// Rotates the given tenants: each one's prepared `next` key, or else a new key of its own,
    /// signs from now on; previous keys stay in the keysets as `grace`.
    func rotate(tenantIds: [String], expectedNextKid: String? = nil, actor: AuditActor) async throws -> [RotationOutcome] {
        let now = clock.unixSeconds
        // Made before the transaction (sealing is no work to hold a writer for); unused ones are dropped.
        let fresh = try Dictionary(uniqueKeysWithValues: tenantIds.map { ($0, try makeRow(tenantId: $0, now: now)) })
        let outcomes = try await database.rotateSigningKeys(fresh: fresh, order: tenantIds, expectedNextKid: expectedNextKid, now: now, actor: actor)
        try await reload()
        return outcomes
    }

    func retire(kid: String, tenantId: String?, actor: AuditActor) async throws -> RetireOutcome {
        let outcome = try await database.retireSigningKey(kid: kid, tenantId: tenantId, now: clock.unixSeconds, actor: actor)
        try await reload()
        return outcome
    }

    private func open(_ row: SigningKeyRow) throws -> SigningKey {
        if let key = opened.withLockedValue({ $0[row.kid] }) { return key }
        let privateRaw = try sealer.open(row.sealedPrivateKey, context: Self.sealContext(row.kid))
        let key = try SigningKey(kid: row.kid, privateKey: .init(rawRepresentation: privateRaw))
        opened.withLockedValue { $0[row.kid] = key }
        return key
    }

    private func makeRow(tenantId: String, now: Int64) throws -> SigningKeyRow {
        let key = try SigningKey.generate()
        return SigningKeyRow(
            tenantId: tenantId, kid: key.kid,
            publicKey: Base64.encode(key.publicKey.rawRepresentation),
            sealedPrivateKey: try sealer.seal(key.privateKey.rawRepresentation, context: Self.sealContext(key.kid)),
            status: .active, createdAt: now, statusChangedAt: now
        )
    }

    private static func encode(_ document: KeysetDocument) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(document))
    }

    static func sealContext(_ kid: String) -> String { "keylight.signing_key.\(kid)" }
}
