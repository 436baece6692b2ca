import Crypto
import Foundation
import KeylightCore
import Logging
import NIOConcurrencyHelpers

/// The server's signing keys: the active private key (decrypted in memory) and the public
/// keyset. Several processes share the keys through the database; each reloads its snapshot
/// after its own rotations and periodically (``PeriodicService/refreshing(_:every:logger:)``) to see others'.
public final class KeyRing: Sendable {
    /// One consistent view of the keys.
    public struct Snapshot: Sendable {
        public let active: SigningKey
        /// Every key with its status, retired ones included (they stay for the record).
        public let rows: [(kid: String, publicKey: String, status: SigningKeyStatus, createdAt: Int64)]
        /// active + grace.
        public let keyset: Keyset
        public let document: KeysetDocument
        /// JSON of `document`, served as-is.
        public let documentJSON: [UInt8]
    }

    let database: Database
    let sealer: SecretSealer
    private let snapshot: NIOLockedValueBox<Snapshot?>

    init(database: Database, sealer: SecretSealer) {
        self.database = database
        self.sealer = sealer
        self.snapshot = NIOLockedValueBox(nil)
    }

    /// The current view. Valid after ``loadCreatingIfNeeded(now:logger:)``.
    public var current: Snapshot {
        guard let value = snapshot.withLockedValue({ $0 }) else { preconditionFailure("KeyRing used before it was loaded") }
        return value
    }

    /// Loads the keys, creating the first signing key on a new database.
    func loadCreatingIfNeeded(now: Int64, logger: Logger) async throws {
        if try await database.signingKeyRows().contains(where: { $0.status == .active }) == false {
            let created = try await database.installSigningKey(try makeRow(now: now), replaceActive: false, actor: .system)
            if created { logger.debug("created the first signing key") }
        }
        try await reload()
    }

    /// Re-reads keys from the database.
    func reload() async throws {
        let rows = try await database.signingKeyRows()
        guard let activeRow = rows.last(where: { $0.status == .active }) else { throw StorageError.corrupt("signing keys (no active key)") }
        let privateRaw = try sealer.open(activeRow.sealedPrivateKey, context: Self.sealContext(activeRow.kid))
        let active = try SigningKey(kid: activeRow.kid, privateKey: .init(rawRepresentation: privateRaw))
        var keyset = Keyset()
        var entries: [KeysetDocument.Entry] = []
        for row in rows where row.status != .retired {
            guard let raw = Base64.decode(row.publicKey), let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else {
                throw StorageError.corrupt("public key \(row.kid)")
            }
            keyset.insert(kid: row.kid, publicKey: key)
            entries.append(.init(kid: row.kid, publicKey: key, status: row.status))
        }
        let document = KeysetDocument(keys: entries)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = Array(try encoder.encode(document))
        let view = Snapshot(
            active: active,
            rows: rows.map { ($0.kid, $0.publicKey, $0.status, $0.createdAt) },
            keyset: keyset, document: document, documentJSON: json
        )
        snapshot.withLockedValue { $0 = view }
    }

    /// Creates a new active key; the previous one stays in the keyset as `grace`.
    func rotate(now: Int64, actor: Actor) async throws -> SigningKey {
        let row = try makeRow(now: now)
        _ = try await database.installSigningKey(row, replaceActive: true, actor: actor)
        try await reload()
        return current.active
    }

    func retire(kid: String, now: Int64, actor: Actor) async throws -> RetireOutcome {
        let outcome = try await database.retireSigningKey(kid: kid, now: now, actor: actor)
        try await reload()
        return outcome
    }

    private func makeRow(now: Int64) throws -> SigningKeyRow {
        let key = try SigningKey.generate()
        return SigningKeyRow(
            kid: key.kid,
            publicKey: Base64.encode(key.publicKey.rawRepresentation),
            sealedPrivateKey: try sealer.seal(key.privateKey.rawRepresentation, context: Self.sealContext(key.kid)),
            status: .active, createdAt: now, statusChangedAt: now
        )
    }

    static func sealContext(_ kid: String) -> String { "keylight.signing_key.\(kid)" }
}
