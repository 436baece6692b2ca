import SQLKit

/// Floating seats: held while the device validates, freed once it has been silent for longer than
/// its key type's `heartbeat_seconds`.
///
/// There is no timer per seat. Each seat row carries its deadline (`seat_expires_at`, indexed
/// where set), and a dead seat is freed by whichever comes first: the periodic sweep, or any
/// activation or validation of the same license. Every path frees seats the same way, in a
/// transaction that first locks the license row; so a sweep, a heartbeat and an activation of one
/// license serialise on that row, locks are always taken license first, then its instances
/// (no deadlock between them), and the counter the activation cap reads is always the number of
/// live seats written in the same transactions.
extension Database {
    /// What freeing a license's dead seats changed: the instances freed and the license after.
    struct FreedSeats: Sendable {
        var instanceIds: [String] = []
        var license: License?
    }

    /// Frees the dead seats of one license, inside the caller's transaction (which holds the
    /// license row): marks them inactive, gives their slots back, and announces each one.
    static func expireSeats(_ db: any SQLDatabase, licenseId: String, tenantId: String, now: Int64, outbox: WebhookOutbox?) async throws -> FreedSeats {
        let expired = try await db.raw("""
            UPDATE instances SET active = \(bind: false), deactivated_at = \(bind: now), seat_expires_at = \(bind: Int64?.none)
            WHERE license_id = \(bind: licenseId) AND active AND seat_expires_at <= \(bind: now)
            RETURNING \(instanceColumns)
            """).all(decoding: Instance.self)
        guard !expired.isEmpty else { return FreedSeats() }
        let license = try await db.raw("""
            UPDATE licenses SET active_instances = active_instances - \(bind: expired.count), updated_at = \(bind: now)
            WHERE id = \(bind: licenseId)
            RETURNING \(licenseColumns)
            """).first(decoding: License.self)
        let log = ChangeLog(tenantId: tenantId, now: now)
        for instance in expired.sorted(by: { $0.id < $1.id }) {
            try await record(log.instanceReleased(instance, licenseId: licenseId, license: license, change: .heartbeatMissed), on: db, outbox: outbox)
        }
        return FreedSeats(instanceIds: expired.map(\.id), license: license)
    }

    /// Moves a live seat's deadline (a validation, or the same machine activating again); false
    /// when the instance is no longer active. The caller must not trust an `active` it read in a join before taking
    /// the license's lock: on PostgreSQL `FOR UPDATE OF` re-reads only the locked row, so a seat the
    /// sweep freed meanwhile can still read active there.
    static func renewSeat(_ db: any SQLDatabase, instanceId: String, until deadline: Int64, now: Int64) async throws -> Bool {
        try await db.raw("""
            UPDATE instances SET seat_expires_at = \(bind: deadline), last_validated_at = \(bind: now)
            WHERE id = \(bind: instanceId) AND active
            RETURNING id
            """).first() != nil
    }

    /// A floating seat's heartbeat: frees the license's dead seats, then moves this instance's
    /// deadline to `now + heartbeat`. Answers the seats in use afterwards, or nil when the instance
    /// holds no seat (deactivated, or silent too long and freed just now): the app must activate again.
    /// `instanceId` must be one of the license's (validate read it in the license's grant).
    func holdSeat(licenseId: String, tenantId: String, instanceId: String, heartbeat: Int, now: Int64) async throws -> Int? {
        let lock = lockRows(of: "licenses")
        let outbox = self.outbox
        return try await hotWrite { db in
            guard let inUse = try await db.raw("SELECT active_instances FROM licenses WHERE id = \(bind: licenseId)\(lock)")
                .first(decodingColumn: "active_instances", as: Int.self) else { return nil }
            let freed = try await Self.expireSeats(db, licenseId: licenseId, tenantId: tenantId, now: now, outbox: outbox)
            guard try await Self.renewSeat(db, instanceId: instanceId, until: now + Int64(heartbeat), now: now) else { return nil }
            return freed.license?.activeInstances ?? inUse
        }
    }

    /// The periodic sweep: one query finds the licenses with dead seats (through the deadline
    /// index), then one transaction frees them, licenses locked in id order. At most `batch`
    /// licenses per call; answers the seats freed.
    func expireFloatingSeats(now: Int64, batch: Int = 200) async throws -> Int {
        struct Candidate: Decodable { var license_id: String; var tenant_id: String }
        let candidates = try await sql.raw("""
            SELECT DISTINCT i.license_id, l.tenant_id FROM instances i JOIN licenses l ON l.id = i.license_id
            WHERE i.seat_expires_at <= \(bind: now) AND i.active
            ORDER BY i.license_id LIMIT \(literal: max(1, batch))
            """).all(decoding: Candidate.self)
        guard !candidates.isEmpty else { return 0 }
        let lock = lockRows(of: "licenses")
        let outbox = self.outbox
        return try await write { db in
            var freed = 0
            for candidate in candidates {
                _ = try await db.raw("SELECT id FROM licenses WHERE id = \(bind: candidate.license_id)\(lock)").first()
                freed += try await Self.expireSeats(db, licenseId: candidate.license_id, tenantId: candidate.tenant_id, now: now, outbox: outbox).instanceIds.count
            }
            return freed
        }
    }
}
