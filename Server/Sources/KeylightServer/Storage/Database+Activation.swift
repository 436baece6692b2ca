import KeylightCore
import SQLKit

/// What the hot SDK paths need to know about a license, read in one query.
struct LicenseGrant: Decodable, Equatable, Sendable {
    var licenseId: String
    var status: LicenseStatus
    var expiresAt: Int64?
    var keyHash: String
    var activationLimit: Int
    var fallbackAccess: Bool
    var leaseTtlSeconds: Int64
    var entitlements: String
    /// Lease lifetime of an offline activation (protocol 6.4).
    var offlineLeaseDays: Int
    /// Present when the query named an instance and it belongs to this license.
    var instanceId: String?
    var instanceActive: Bool?
    var instanceMachineHash: String?
    /// The device key of an instance activated offline.
    var instanceDeviceKey: String?
    /// Seats held only while validating, for `heartbeatSeconds` after each validation.
    var floating: Bool
    var heartbeatSeconds: Int
    var overagePercent: Int
    /// Seats in use as read (kept current by the transactions that change them).
    var activeInstances: Int
    /// The newest build release date the purchase covers, signed into active leases.
    var updatesUntil: Int64?

    /// The key type's entitlements, plus the signed updates bound when the license has one.
    var entitlementCodes: [String] {
        var codes = entitlements.split(separator: ",").map(String.init)
        if let updatesUntil { codes.append(UpdatesEntitlement.code(until: updatesUntil)) }
        return codes
    }

    /// Seats the license may hold: the limit plus the overage.
    var seatCap: Int { SeatCap.of(limit: activationLimit, overagePercent: overagePercent) }
    /// More seats in use than the limit (possible only with overage).
    var overLimit: Bool { activeInstances > activationLimit }
    /// An online lease's lifetime: a floating seat's lease lasts one heartbeat, so an app that
    /// stops validating stops being licensed about when its seat is freed.
    var onlineLeaseTTL: Int64 { floating ? Int64(heartbeatSeconds) : leaseTtlSeconds }

    enum CodingKeys: String, CodingKey {
        case licenseId = "license_id", status, expiresAt = "expires_at", keyHash = "key_hash", activationLimit = "activation_limit"
        case fallbackAccess = "fallback_access", leaseTtlSeconds = "lease_ttl_seconds", entitlements, offlineLeaseDays = "offline_lease_days", instanceId = "instance_id"
        case instanceActive = "instance_active", instanceMachineHash = "instance_machine_hash", instanceDeviceKey = "instance_device_key"
        case floating, heartbeatSeconds = "heartbeat_seconds", overagePercent = "overage_percent", activeInstances = "active_instances", updatesUntil = "updates_until"
    }
}

/// The result of an activation attempt, decided inside its transaction.
enum ActivationOutcome: Sendable {
    /// A new instance took a slot.
    case activated(instanceId: String, grant: LicenseGrant)
    /// The machine (or instance) was already active: no new slot used.
    case existing(instanceId: String, grant: LicenseGrant)
    case licenseNotFound
    case refused(LicenseGrant)
    case limitReached
}

/// The result of a deactivation.
enum DeactivationOutcome: Sendable, Equatable {
    case deactivated
    case alreadyInactive
    case licenseNotFound
    case instanceNotFound
    /// The deactivation needed a proof the instance's device key did not sign (nothing changed).
    case invalidProof
}

/// Who changed an instance and by which route, for the audit log and the `how` of
/// `instance.activated` / `instance.deactivated` webhooks.
struct InstanceChange: Sendable {
    /// `customer` (the app's own deactivate, the portal), `offline` (files), an admin.
    var actor: AuditActor
    var how: How

    enum How: String, Sendable {
        /// The app, over the SDK API (`activate`, `deactivate`).
        case app
        /// The customer portal.
        case portal
        /// An offline request file (activation) or a signed proof (deactivation).
        case offlineRequest = "offline_request"
        case offlineProof = "offline_proof"
        /// The admin API or the dashboard.
        case admin
    }

    static let app = InstanceChange(actor: .customer, how: .app)
}

extension Database {
    static func grantQuery(keyHash: String, tenantId: String, productId: String, instanceId: String?, lock: SQLQueryString) -> SQLQueryString {
        """
        SELECT l.id AS license_id, l.status, l.expires_at, l.key_hash, k.activation_limit, k.fallback_access, k.lease_ttl_seconds, k.entitlements, k.offline_lease_days,
               k.floating, k.heartbeat_seconds, k.overage_percent, l.active_instances, l.updates_until,
               i.id AS instance_id, i.active AS instance_active, i.machine_hash AS instance_machine_hash,
               i.device_key AS instance_device_key
        FROM licenses l
        JOIN key_types k ON k.tenant_id = l.tenant_id AND k.product_id = l.product_id AND k.id = l.key_type_id
        LEFT JOIN instances i ON i.id = \(bind: instanceId ?? "") AND i.license_id = l.id
        WHERE l.key_hash = \(bind: keyHash) AND l.tenant_id = \(bind: tenantId) AND l.product_id = \(bind: productId)\(lock)
        """
    }

    /// The license (and optionally one of its instances) by key hash, within one product.
    func grant(keyHash: String, tenantId: String, productId: String, instanceId: String?) async throws -> LicenseGrant? {
        try await pointReads.raw(Self.grantQuery(keyHash: keyHash, tenantId: tenantId, productId: productId, instanceId: instanceId, lock: ""))
            .first(decoding: LicenseGrant.self)
    }

    /// Activates one instance, or finds the one this machine already has.
    ///
    /// The cap holds because the only way to take a slot is a conditional UPDATE of the
    /// license's counter (`active_instances < limit`), which the database applies atomically
    /// however many requests or processes race; the instance row is inserted in the same
    /// transaction. `refuse` decides, from the license as read in the transaction, whether it
    /// may activate at all (revoked, suspended, expired without fallback).
    func activate(
        keyHash: String, tenantId: String, productId: String,
        newInstanceId: String, name: String, machineHash: String?, existingInstanceId: String?,
        freeTierInstanceId: String?, now: Int64, deviceKey: String? = nil, change: InstanceChange = .app,
        refuse: @escaping @Sendable (LicenseGrant) -> Bool
    ) async throws -> ActivationOutcome {
        let lock = lockRows(of: "l")
        let outbox = self.outbox
        return try await write { db in
            guard var grant = try await db.raw(Self.grantQuery(keyHash: keyHash, tenantId: tenantId, productId: productId, instanceId: existingInstanceId, lock: lock))
                .first(decoding: LicenseGrant.self) else {
                return .licenseNotFound
            }
            if refuse(grant) { return .refused(grant) }
            // Dead floating seats are freed before anything counts them: under the license's lock,
            // so the seat a silent device held goes to this activation at once, not at the next sweep.
            let seatDeadline: Int64? = grant.floating ? now + Int64(grant.heartbeatSeconds) : nil
            if grant.floating {
                let freed = try await Self.expireSeats(db, licenseId: grant.licenseId, tenantId: tenantId, now: now, outbox: outbox)
                if let license = freed.license { grant.activeInstances = license.activeInstances }
                if let id = grant.instanceId, freed.instanceIds.contains(id) { grant.instanceActive = false }
            }
            if let id = grant.instanceId, grant.instanceActive == true {
                guard let seatDeadline else { return .existing(instanceId: id, grant: grant) }
                // A floating seat freed while this waited for the lock goes on to take a new seat.
                if try await Self.renewSeat(db, instanceId: id, until: seatDeadline, now: now) {
                    return .existing(instanceId: id, grant: grant)
                }
            }
            if let machineHash, let id = try await db.raw("""
                SELECT id FROM instances WHERE license_id = \(bind: grant.licenseId) AND machine_hash = \(bind: machineHash) AND active
                """).first(decodingColumn: "id", as: String.self) {
                if let deviceKey {
                    // The machine asks offline now: its proofs will be signed by the key of this request.
                    try await db.raw("UPDATE instances SET device_key = \(bind: deviceKey) WHERE id = \(bind: id)").run()
                }
                if let seatDeadline { _ = try await Self.renewSeat(db, instanceId: id, until: seatDeadline, now: now) }
                return .existing(instanceId: id, grant: grant)
            }
            let reserved = try await db.raw("""
                UPDATE licenses SET active_instances = active_instances + 1, updated_at = \(bind: now)
                WHERE id = \(bind: grant.licenseId) AND active_instances < \(bind: grant.seatCap)
                RETURNING \(Self.licenseColumns)
                """).first(decoding: License.self)
            guard let reserved else {
                try await Self.noteLimitReached(db, grant: grant, tenantId: tenantId, name: name, now: now, outbox: outbox)
                return .limitReached
            }
            grant.activeInstances = reserved.activeInstances
            try await db.raw("""
                INSERT INTO instances (\(Self.instanceColumns)) VALUES (
                    \(bind: newInstanceId), \(bind: grant.licenseId), \(bind: name), \(bind: machineHash), \(bind: true),
                    \(bind: now), \(bind: now), \(bind: Int64?.none), \(bind: deviceKey), \(bind: seatDeadline))
                """).run()
            if change.how != .app {
                try await Self.audit(db, at: now, actor: change.actor, action: "instance.activate", tenantId: tenantId, target: grant.licenseId, details: [
                    "instance_id": newInstanceId, "how": change.how.rawValue,
                ])
            }
            if let freeTierInstanceId {
                try await Self.recordConversion(
                    db, tenantId: tenantId, productId: productId, installId: freeTierInstanceId, licenseId: grant.licenseId, instanceId: newInstanceId, now: now
                )
            }
            try await outbox.enqueue(WebhookEvent(type: .instanceActivated, tenantId: tenantId, at: now, data: .init(
                license: reserved, instance: WebhookInstance(id: newInstanceId, name: name, activated_at: now, deactivated_at: nil),
                source: change.how == .app ? "sdk" : change.actor.name, how: change.how.rawValue
            )), on: db)
            return .activated(instanceId: newInstanceId, grant: grant)
        }
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
            """).first(decoding: License.self) else { return }
        try await outbox.enqueue(WebhookEvent(type: .activationLimitReached, tenantId: tenantId, at: now, data: .init(
            license: license, activationLimit: grant.activationLimit, refusedInstanceName: name
        )), on: db)
    }

    /// Frees an instance's slot. Idempotent: an inactive instance stays inactive. `proof`, when
    /// given, must accept the instance (its device key) or nothing changes.
    func deactivate(
        keyHash: String?, licenseId: String?, tenantId: String, productId: String, instanceId: String, now: Int64,
        change: InstanceChange, proof: (@Sendable (Instance) -> Bool)? = nil
    ) async throws -> DeactivationOutcome {
        let lock = lockRows(of: "licenses")
        let outbox = self.outbox
        return try await write { db in
            var query: SQLQueryString = "SELECT id FROM licenses WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)"
            if let keyHash { query += " AND key_hash = \(bind: keyHash)" }
            if let licenseId { query += " AND id = \(bind: licenseId)" }
            // Neither (protocol 6.7): the instance alone names its license.
            if keyHash == nil, licenseId == nil { query += " AND id = (SELECT license_id FROM instances WHERE id = \(bind: instanceId))" }
            query += lock
            guard let license = try await db.raw(query).first(decodingColumn: "id", as: String.self) else { return .licenseNotFound }
            guard let instance = try await db.raw("""
                SELECT \(Self.instanceColumns) FROM instances WHERE id = \(bind: instanceId) AND license_id = \(bind: license)
                """).first(decoding: Instance.self) else { return .instanceNotFound }
            if let proof, !proof(instance) { return .invalidProof }
            guard instance.active else { return .alreadyInactive }
            try await db.raw("""
                UPDATE instances SET active = \(bind: false), deactivated_at = \(bind: now), seat_expires_at = \(bind: Int64?.none) WHERE id = \(bind: instanceId)
                """).run()
            let updated = try await db.raw("""
                UPDATE licenses SET active_instances = active_instances - 1, updated_at = \(bind: now) WHERE id = \(bind: license)
                RETURNING \(Self.licenseColumns)
                """).first(decoding: License.self)
            try await Self.audit(db, at: now, actor: change.actor, action: "instance.deactivate", tenantId: tenantId, target: license, details: [
                "instance_id": instanceId, "how": change.how.rawValue,
            ])
            if let updated {
                try await outbox.enqueue(WebhookEvent(type: .instanceDeactivated, tenantId: tenantId, at: now, data: .init(
                    license: updated, instance: WebhookInstance(id: instance.id, name: instance.name, activated_at: instance.activatedAt, deactivated_at: now),
                    source: change.how == .app ? "sdk" : change.actor.name, how: change.how.rawValue
                )), on: db)
            }
            return .deactivated
        }
    }

    /// A license's active instances, oldest first (protocol 6.3), by key hash within one product;
    /// nil when no license has that key.
    func activeInstances(keyHash: String, tenantId: String, productId: String) async throws -> (LicenseGrant, [Instance])? {
        guard let grant = try await sql.raw(Self.grantQuery(keyHash: keyHash, tenantId: tenantId, productId: productId, instanceId: nil, lock: ""))
            .first(decoding: LicenseGrant.self) else { return nil }
        let instances = try await sql.raw("""
            SELECT \(Self.instanceColumns) FROM instances WHERE license_id = \(bind: grant.licenseId) AND active ORDER BY activated_at, id
            """).all(decoding: Instance.self)
        return (grant, instances)
    }

    /// Records validation times and adds usage counts, many at once (the write-behind flush).
    func touchInstances(
        _ times: [String: Int64], usage: [UsageDay: UsageCount] = [:], keyless: [KeylessInstall: KeylessSighting] = [:],
        devices: [InstanceDay: DeviceSighting] = [:], instanceTelemetry: [String: Telemetry] = [:]
    ) async throws {
        guard !times.isEmpty || !usage.isEmpty || !keyless.isEmpty || !devices.isEmpty || !instanceTelemetry.isEmpty else { return }
        let lock = capabilities.rowLockClause
        try await write { db in
            for (install, sighting) in keyless {
                try await Self.storeKeyless(db, install, sighting, lock: lock)
            }
            for (id, at) in times {
                try await db.raw("""
                    UPDATE instances SET last_validated_at = \(bind: at)
                    WHERE id = \(bind: id) AND (last_validated_at IS NULL OR last_validated_at < \(bind: at))
                    """).run()
            }
            try await Self.recordDeviceDays(db, devices.map { (kind: DeviceKind.licensed, deviceId: $0.key.instanceId, sighting: $0.value) })
            for (id, telemetry) in instanceTelemetry {
                try await db.raw("UPDATE instances SET \(Self.telemetryAssignments(telemetry)) WHERE id = \(bind: id)").run()
            }
            for (key, count) in usage {
                try await db.raw("""
                    INSERT INTO usage_daily (tenant_id, product_id, day, activations, validations)
                    VALUES (\(bind: key.tenantId), \(bind: key.productId), \(bind: key.day), \(bind: count.activations), \(bind: count.validations))
                    ON CONFLICT (tenant_id, product_id, day) DO UPDATE SET
                        activations = usage_daily.activations + excluded.activations,
                        validations = usage_daily.validations + excluded.validations
                    """).run()
            }
        }
    }

    /// Deletes keyless installs that never bought a license and were last seen before `cutoff`
    /// (abandoned trials, and ids made up by whoever holds the public SDK key); answers how many.
    func pruneKeyless(seenBefore cutoff: Int64) async throws -> Int {
        try await write { db in
            try await db.raw("""
                DELETE FROM keyless_installs WHERE last_seen_at < \(bind: cutoff) AND converted_license_id IS NULL RETURNING instance_id
                """).all().count
        }
    }
}
