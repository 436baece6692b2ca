import KeylightCore
import SQLKit

extension Database {
    static func grantQuery(
        keyHash: String, tenantId: String, productId: String, instanceId: String?, extraColumns: SQLQueryString = "", lock: SQLQueryString
    ) -> SQLQueryString {
        """
        SELECT l.id AS license_id, l.status, l.expires_at, l.key_hash, COALESCE(l.activation_limit_override, k.activation_limit) AS activation_limit,
               k.fallback_access, k.lease_ttl_seconds, k.entitlements, k.offline_lease_days,
               k.floating, k.heartbeat_seconds, k.overage_percent, l.active_instances, l.updates_until, l.customer_email, k.display_name AS key_type_name,
               l.entitlements_added, l.starts_on_activation, k.duration_days, k.updates_days,
               i.id AS instance_id, i.active AS instance_active, i.machine_hash AS instance_machine_hash,
               i.device_key AS instance_device_key\(extraColumns)
        FROM licenses l
        JOIN key_types k ON k.tenant_id = l.tenant_id AND k.product_id = l.product_id AND k.id = l.key_type_id
        LEFT JOIN instances i ON i.id = \(bind: instanceId ?? "") AND i.license_id = l.id
        WHERE l.key_hash = \(bind: keyHash) AND l.tenant_id = \(bind: tenantId) AND l.product_id = \(bind: productId)\(lock)
        """
    }

    /// The license (and optionally one of its instances) by key hash, within one product.
    func grant(keyHash: String, tenantId: String, productId: String, instanceId: String?) async throws -> LicenseGrant? {
        if let direct = pointReads as? SQLitePointReadDatabase,
           case .some(let grant) = try direct.grant(keyHash: keyHash, tenantId: tenantId, productId: productId, instanceId: instanceId) {
            return grant
        }
        return try await pointReads.raw(Self.grantQuery(keyHash: keyHash, tenantId: tenantId, productId: productId, instanceId: instanceId, lock: ""))
            .firstGrant()
    }

    /// Activates one instance, or finds the one this machine already has.
    ///
    /// The cap holds because the only way to take a slot is a conditional UPDATE of the
    /// license's counter (`active_instances <` the seat cap: the limit plus any overage), which the database applies atomically
    /// however many requests or processes race; the instance row is inserted in the same
    /// transaction. `refusal` (the domain's ``LicenseRules``) decides, from the license as read
    /// and locked in the transaction, whether it may activate at all; its reason is returned.
    func activate(
        keyHash: String, tenantId: String, productId: String,
        newInstanceId: String, name: String, machineHash: String?, existingInstanceId: String?,
        freeTierInstanceId: String?, now: Int64, deviceKey: String? = nil, change: InstanceChange = .app,
        refusal: @escaping @Sendable (LicenseGrant) -> APIError?
    ) async throws -> ActivationOutcome {
        let lock = lockRows(of: "l")
        let outbox = self.outbox
        let writesThroughCTEs = capabilities.writesThroughCTEs
        let rowLocks = capabilities.rowLockClause != nil
        // Read with the license, in the same statement: the machine's active instance, and
        // whether any endpoint takes `instance.activated` (so the outbox need not ask). On
        // PostgreSQL each statement is a round trip.
        var columns: SQLQueryString = ""
        if let machineHash {
            columns = """
                , (SELECT mi.id FROM instances mi WHERE mi.license_id = l.id AND mi.machine_hash = \(bind: machineHash) AND mi.active LIMIT 1) AS machine_instance_id
                """
        }
        if outbox != nil {
            columns = "\(columns), \(WebhookOutbox.subscribed(to: .instanceActivated, tenant: "l.tenant_id")) AS activation_subscribed"
        }
        let extraColumns = columns
        return try await hotWrite { db in
            let row = try await db.raw(Self.grantQuery(
                keyHash: keyHash, tenantId: tenantId, productId: productId, instanceId: existingInstanceId, extraColumns: extraColumns, lock: lock
            )).first()
            guard let row else { return .licenseNotFound }
            var grant = try LicenseGrant(row: row)
            if let reason = refusal(grant) { return .refused(reason, grant: grant) }
            var machineInstanceId: String?
            if machineHash != nil, try !row.decodeNil(column: "machine_instance_id") {
                machineInstanceId = try row.decode(column: "machine_instance_id", as: String.self)
            }
            let subscribed = outbox == nil ? nil : try row.decode(column: "activation_subscribed", as: Bool.self)
            // Dead floating seats are freed before anything counts them: under the license's lock,
            // so the seat a silent device held goes to this activation at once, not at the next sweep.
            let seatDeadline: Int64? = grant.floating ? now + Int64(grant.heartbeatSeconds) : nil
            if grant.floating {
                let freed = try await Self.expireSeats(db, licenseId: grant.licenseId, tenantId: tenantId, now: now, outbox: outbox)
                if let license = freed.license { grant.activeInstances = license.activeInstances }
                if let id = grant.instanceId, freed.instanceIds.contains(id) { grant.instanceActive = false }
                if let id = machineInstanceId, freed.instanceIds.contains(id) { machineInstanceId = nil }
            }
            if let id = grant.instanceId, grant.instanceActive == true {
                guard let seatDeadline else { return .existing(instanceId: id, grant: grant) }
                // A floating seat freed while this waited for the lock goes on to take a new seat.
                if try await Self.renewSeat(db, instanceId: id, until: seatDeadline, now: now) {
                    return .existing(instanceId: id, grant: grant)
                }
            }
            if let id = machineInstanceId,
               try await Self.confirmMachineInstance(db, id: id, deviceKey: deviceKey, seatDeadline: seatDeadline, now: now, readBeforeLock: rowLocks) {
                return .existing(instanceId: id, grant: grant)
            }
            // A license that starts on its first activation is dated by the activation that
            // takes its first seat, in the same statement (the license row is locked).
            var dating: SQLQueryString = ""
            if grant.startsOnActivation {
                // Only the dates still unset: one given meanwhile (an edit, a renewal) stands.
                let dates = grant.firstActivationDates(now: now)
                dating = ", expires_at = \(bind: dates.expiresAt), updates_until = \(bind: dates.updatesUntil), starts_on_activation = \(bind: false)"
            }
            let reserve: SQLQueryString = """
                UPDATE licenses SET active_instances = active_instances + 1, updated_at = \(bind: now)\(dating)
                WHERE id = \(bind: grant.licenseId) AND active_instances < \(bind: grant.seatCap)
                RETURNING \(Self.licenseColumns)
                """
            let reserved: License?
            if writesThroughCTEs {
                // The slot and the instance in one statement: the INSERT takes its row from the
                // UPDATE's, so a refused UPDATE inserts nothing.
                reserved = try await db.raw("""
                    WITH reserved AS (\(reserve)), inserted AS (
                        INSERT INTO instances (\(Self.instanceColumns))
                        SELECT \(bind: newInstanceId), reserved.id, \(bind: name), \(bind: machineHash), \(bind: true),
                               \(bind: now), \(bind: now), \(bind: Int64?.none), \(bind: deviceKey), \(bind: seatDeadline) FROM reserved
                    )
                    SELECT \(Self.licenseColumns) FROM reserved
                    """).firstLicense()
            } else {
                reserved = try await db.raw(reserve).firstLicense()
                if reserved != nil {
                    try await db.raw("""
                        INSERT INTO instances (\(Self.instanceColumns)) VALUES (
                            \(bind: newInstanceId), \(bind: grant.licenseId), \(bind: name), \(bind: machineHash), \(bind: true),
                            \(bind: now), \(bind: now), \(bind: Int64?.none), \(bind: deviceKey), \(bind: seatDeadline))
                        """).run()
                }
            }
            guard let reserved else {
                try await Self.noteLimitReached(db, grant: grant, tenantId: tenantId, name: name, now: now, outbox: outbox)
                return .limitReached
            }
            grant.activeInstances = reserved.activeInstances
            if grant.startsOnActivation {
                grant.expiresAt = reserved.expiresAt
                grant.updatesUntil = reserved.updatesUntil
                grant.startsOnActivation = false
            }
            if let freeTierInstanceId {
                try await Self.recordConversion(
                    db, tenantId: tenantId, productId: productId, installId: freeTierInstanceId, licenseId: grant.licenseId, instanceId: newInstanceId, now: now
                )
            }
            try await Self.record(
                ChangeLog(tenantId: tenantId, now: now).instanceActivated(id: newInstanceId, name: name, license: reserved, change: change),
                on: db, outbox: outbox, subscribed: subscribed.map { (.instanceActivated, $0) }
            )
            return .activated(instanceId: newInstanceId, grant: grant)
        }
    }

    /// Whether the machine's instance, read with the license, is still active, updated as this
    /// activation asks (the device key of an offline activation, a floating seat's deadline);
    /// false sends the activation on to take a seat of its own.
    ///
    /// `readBeforeLock`: on a database with row locks (PostgreSQL) the statement that read the
    /// instance may have waited for the license's lock, and it sees the other tables as they were
    /// before that wait, so a deactivation that committed meanwhile is not in what it read. Each
    /// statement here checks `active` again; without any, that takes one `SELECT`. SQLite's
    /// write lock is taken before anything is read, so what it read holds.
    private static func confirmMachineInstance(
        _ db: any SQLDatabase, id: String, deviceKey: String?, seatDeadline: Int64?, now: Int64, readBeforeLock: Bool
    ) async throws -> Bool {
        if let deviceKey {
            // The machine asks offline now: its proofs will be signed by the key of this request.
            guard try await db.raw("UPDATE instances SET device_key = \(bind: deviceKey) WHERE id = \(bind: id) AND active RETURNING id").first() != nil else {
                return false
            }
        }
        if let seatDeadline { return try await renewSeat(db, instanceId: id, until: seatDeadline, now: now) }
        guard readBeforeLock, deviceKey == nil else { return true }
        return try await db.raw("SELECT id FROM instances WHERE id = \(bind: id) AND active").first() != nil
    }

    /// Seconds between two `license.activation_limit_reached` events of one license: a device
    /// retrying in a loop must not flood the developer's endpoint.
    static let limitEventInterval: Int64 = 3_600

    private static func noteLimitReached(_ db: any SQLDatabase, grant: LicenseGrant, tenantId: String, name: String, now: Int64, outbox: WebhookOutbox?) async throws {
        guard let outbox else { return }
        guard let license = try await db.raw("""
            UPDATE licenses SET activation_limit_notified_at = \(bind: now)
            WHERE id = \(bind: grant.licenseId)
              AND (activation_limit_notified_at IS NULL OR activation_limit_notified_at <= \(bind: now - limitEventInterval))
            RETURNING \(licenseColumns)
            """).firstLicense() else { return }
        try await record(
            ChangeLog(tenantId: tenantId, now: now).activationLimitReached(license: license, activationLimit: grant.activationLimit, refusedName: name), on: db, outbox: outbox
        )
    }
}
