import Foundation
import HTTPTypes
import KeylightCore
import Logging
import NIOConcurrencyHelpers

/// Signs SDK responses (protocol section 3) with the day's intermediate key: one Ed25519
/// signature per response; the root key only certifies the intermediate, once a day.
final class ResponseSigner: Sendable {
    let database: Database
    let keyRing: KeyRing
    let sealer: SecretSealer
    let clock: any WallClock
    private let current = NIOLockedValueBox<IntermediateSigningKey?>(nil)

    /// Days an intermediate key stays valid after the day it is created.
    static let validityDays: Int64 = 3

    init(database: Database, keyRing: KeyRing, sealer: SecretSealer, clock: any WallClock) {
        self.database = database
        self.keyRing = keyRing
        self.sealer = sealer
        self.clock = clock
    }

    /// Makes today's intermediate key for the active root current, creating it if no process
    /// has yet. Called at start, periodically (so keys rotate daily without a restart) and after
    /// a root rotation.
    func refresh() async throws {
        let now = clock.unixSeconds
        let today = keylightDay(now)
        let root = keyRing.current.active
        if let existing = current.withLockedValue({ $0 }), existing.rootKid == root.kid, Int64(existing.certificate.expiryDay) == today + Self.validityDays {
            return
        }
        var row = try await database.responseSigningKey(rootKid: root.kid, createdDay: today)
        if row == nil {
            let created = IntermediateSigningKey.create(root: root, expiryDay: UInt32(clamping: today + Self.validityDays))
            let id = UUID().uuidString.lowercased()
            try await database.insertResponseSigningKey(ResponseSigningKeyRow(
                id: id, rootKid: root.kid, createdDay: today, expiryDay: today + Self.validityDays,
                sealedPrivateKey: try sealer.seal(created.privateKey.rawRepresentation, context: Self.sealContext(root.kid, today)),
                certificate: Base64.encode(created.certificate.bytes)
            ), now: now)
            // Another process may have won the race: use whichever key is stored.
            row = try await database.responseSigningKey(rootKid: root.kid, createdDay: today)
        }
        guard let row, let certificate = Base64.decode(row.certificate) else { throw StorageError.corrupt("response signing key") }
        let privateKey = try sealer.open(row.sealedPrivateKey, context: Self.sealContext(row.rootKid, row.createdDay))
        let key = try IntermediateSigningKey(rootKid: row.rootKid, privateKeyRaw: privateKey, certificateBytes: Array(certificate))
        current.withLockedValue { $0 = key }
    }

    /// The three signature headers for a response body, or nil before the first refresh.
    func headers(nonce: ResponseNonce, path: String, body: [UInt8]) -> HTTPFields? {
        guard let key = current.withLockedValue({ $0 }) else { return nil }
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
