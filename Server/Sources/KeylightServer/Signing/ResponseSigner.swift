import Foundation
import HTTPTypes
import KeylightCore
import KeylightSigning
import Logging
import NIOConcurrencyHelpers

/// Signs SDK responses (protocol section 3) with the day's intermediate key of the tenant's
/// active root key: one Ed25519 signature per response; the root key only certifies the
/// intermediate, once a day. Tenants that share a root key (after the upgrade to per-tenant keys)
/// share its intermediate.
final class ResponseSigner: Sendable {
    let database: Database
    let keyRing: KeyRing
    let sealer: SecretSealer
    let clock: any WallClock
    /// Today's intermediate key by root kid.
    private let current = NIOLockedValueBox<[String: IntermediateSigningKey]>([:])

    /// Days an intermediate key stays valid after the day it is created.
    static let validityDays: Int64 = 3

    init(database: Database, keyRing: KeyRing, sealer: SecretSealer, clock: any WallClock) {
        self.database = database
        self.keyRing = keyRing
        self.sealer = sealer
        self.clock = clock
    }

    /// Makes today's intermediate key current for every active root key, creating it if no
    /// process has yet. Called at start, periodically (so keys rotate daily without a restart)
    /// and after a rotation.
    func refresh() async throws {
        let roots = Dictionary(keyRing.current.tenants.values.map { ($0.active.kid, $0.active) }, uniquingKeysWith: { first, _ in first })
        for root in roots.values {
            _ = try await intermediate(for: root)
        }
        // Keys of roots that no longer sign are dropped.
        current.withLockedValue { keys in keys = keys.filter { roots[$0.key] != nil } }
    }

    /// Today's intermediate key for `root`, from memory, the database, or created.
    private func intermediate(for root: SigningKey) async throws -> IntermediateSigningKey {
        let today = keylightDay(clock.unixSeconds)
        if let existing = current.withLockedValue({ $0[root.kid] }), Int64(existing.certificate.expiryDay) == today + Self.validityDays {
            return existing
        }
        var row = try await database.responseSigningKey(rootKid: root.kid, createdDay: today)
        if row == nil {
            let created = IntermediateSigningKey.create(root: root, expiryDay: UInt32(clamping: today + Self.validityDays))
            let id = UUID().uuidString.lowercased()
            try await database.insertResponseSigningKey(ResponseSigningKeyRow(
                id: id, rootKid: root.kid, createdDay: today, expiryDay: today + Self.validityDays,
                sealedPrivateKey: try sealer.seal(created.privateKey.rawRepresentation, context: Self.sealContext(root.kid, today)),
                certificate: Base64.encode(created.certificate.bytes)
            ), now: clock.unixSeconds)
            // Another process may have won the race: use whichever key is stored.
            row = try await database.responseSigningKey(rootKid: root.kid, createdDay: today)
        }
        guard let row, let certificate = Base64.decode(row.certificate) else { throw StorageError.corrupt("response signing key") }
        let privateKey = try sealer.open(row.sealedPrivateKey, context: Self.sealContext(row.rootKid, row.createdDay))
        let key = try IntermediateSigningKey(rootKid: row.rootKid, privateKeyRaw: privateKey, certificateBytes: Array(certificate))
        current.withLockedValue { $0[root.kid] = key }
        return key
    }

    /// The three signature headers for a response of `tenantId`'s SDK API, or nil when the
    /// tenant has no keys (an unknown tenant: nothing of its can be signed).
    func headers(tenantId: String, nonce: ResponseNonce, path: String, body: [UInt8]) async throws -> HTTPFields? {
        guard let root = keyRing.current[tenantId]?.active else { return nil }
        let key = try await intermediate(for: root)
        let requestTime = String(clock.unixMilliseconds)
        var generator = SystemRandomNumberGenerator()
        let signature = key.sign(nonce: nonce.bytes, path: path, requestTime: requestTime, body: body, using: &generator)
        return [
            .keylightRequestTime: requestTime,
            .keylightSignatureKid: key.rootKid,
            .keylightSignature: signature.header,
        ]
    }

    static func sealContext(_ rootKid: String, _ day: Int64) -> String { "keylight.response_key.\(rootKid).\(day)" }
}

extension PeriodicService {
    /// Keeps the day's intermediate key current (daily rotation without a restart).
    static func rotating(_ signer: ResponseSigner, every interval: Duration, logger: Logger) -> PeriodicService {
        PeriodicService(interval: interval, tick: {
            do {
                try await signer.refresh()
            } catch {
                logger.debug("could not refresh the response signing key", metadata: ["error": "\(error)"])
            }
        })
    }
}
