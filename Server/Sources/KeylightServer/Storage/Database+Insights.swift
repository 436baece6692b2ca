import SQLKit

extension Database {
    /// The telemetry columns, in ``InsightDimension`` order.
    static var telemetryColumns: SQLQueryString { "\(idents: InsightDimension.allCases.map(\.column), joinedBy: ", ")" }

    static func telemetryBinds(_ telemetry: Telemetry) -> SQLQueryString {
        "\(binds: InsightDimension.allCases.map { telemetry[$0] })"
    }

    /// `column = value, …` setting every telemetry column to `telemetry`'s (NULL where not sent).
    static func telemetryAssignments(_ telemetry: Telemetry) -> SQLQueryString {
        InsightDimension.allCases.map { "\(ident: $0.column) = \(bind: telemetry[$0])" as SQLQueryString }.joined(separator: ", ")
    }

    /// `column = excluded.column, …` for an upsert that keeps the newest telemetry.
    static var telemetryFromExcluded: SQLQueryString {
        InsightDimension.allCases.map { "\(ident: $0.column) = excluded.\(ident: $0.column)" as SQLQueryString }.joined(separator: ", ")
    }

    // MARK: Writes (inside the activity flush's transaction)

    /// One device seen on one day, with its latest values that day.
    static func recordDeviceDay(_ db: any SQLDatabase, kind: DeviceKind, deviceId: String, _ sighting: DeviceSighting) async throws {
        try await recordDeviceDays(db, [(kind, deviceId, sighting)])
    }

    /// Devices seen on a day, a few hundred rows a statement (each device and day at most once).
    static func recordDeviceDays(_ db: any SQLDatabase, _ days: [(kind: DeviceKind, deviceId: String, sighting: DeviceSighting)]) async throws {
        for start in stride(from: 0, to: days.count, by: 200) {
            let rows = days[start..<min(start + 200, days.count)].map { day in
                let sighting = day.sighting
                return "(\(bind: sighting.tenantId), \(bind: sighting.productId), \(bind: sighting.day), \(bind: day.kind.rawValue), \(bind: day.deviceId), \(telemetryBinds(sighting.telemetry)))" as SQLQueryString
            }.joined(separator: ", ")
            try await db.raw("""
                INSERT INTO device_days (tenant_id, product_id, day, kind, device_id, \(telemetryColumns)) VALUES \(rows)
                ON CONFLICT (tenant_id, product_id, day, kind, device_id) DO UPDATE SET \(telemetryFromExcluded)
                """).run()
        }
    }

    /// Stores a keyless check-in as protocol 6.8 asks: a new install at once; a known one only
    /// when its state changed or its last stored check-in is 6 hours old. A new install counts in
    /// its cohort's funnel (the day it was first seen), and so does its first trial (a `trial` or
    /// `expired` check-in: expired is a trial that ran out). The day it was seen is counted once
    /// a day whatever the 6-hour rule kept out. `lock` is the database's row lock clause.
    static func storeKeyless(_ db: any SQLDatabase, _ install: KeylessInstall, _ sighting: KeylessSighting, lock: String?) async throws {
        let day = sighting.at.flooringDivided(by: 86_400)
        let device = DeviceSighting(tenantId: install.tenantId, productId: install.productId, day: day, telemetry: sighting.telemetry)
        let trialStart: Int64? = KeylessSighting.startsTrial(sighting.state) ? sighting.at : nil
        let key: SQLQueryString = "tenant_id = \(bind: install.tenantId) AND product_id = \(bind: install.productId) AND instance_id = \(bind: install.instanceId)"
        let inserted = try await db.raw("""
            INSERT INTO keyless_installs (tenant_id, product_id, instance_id, state, machine_hash, first_seen_at, last_seen_at, trial_started_at, \(telemetryColumns))
            VALUES (\(bind: install.tenantId), \(bind: install.productId), \(bind: install.instanceId), \(bind: sighting.state), \(bind: sighting.machineHash),
                    \(bind: sighting.at), \(bind: sighting.at), \(bind: trialStart), \(telemetryBinds(sighting.telemetry)))
            ON CONFLICT (tenant_id, product_id, instance_id) DO NOTHING RETURNING instance_id
            """).first()
        if inserted != nil {
            try await countInFunnel(db, tenantId: install.tenantId, productId: install.productId, day: day, installs: 1, trials: trialStart == nil ? 0 : 1)
            try await recordDeviceDay(db, kind: .keyless, deviceId: install.instanceId, device)
            return
        }
        guard let known = try await db.raw("""
            SELECT first_seen_at, trial_started_at FROM keyless_installs WHERE \(key)\(unsafeRaw: lock.map { " " + $0 } ?? "")
            """).first() else { return }
        var firstSeen = try known.decode(column: "first_seen_at", as: Int64.self)
        let trialCounted = !(try known.decodeNil(column: "trial_started_at"))
        if sighting.at < firstSeen {
            // An earlier check-in than the first one known (another process's flush, or a
            // conversion written before this check-in was): the install belongs to its own day.
            try await db.raw("UPDATE keyless_installs SET first_seen_at = \(bind: sighting.at) WHERE \(key)").run()
            let (from, to) = (firstSeen.flooringDivided(by: 86_400), day)
            if from != to {
                try await countInFunnel(db, tenantId: install.tenantId, productId: install.productId, day: from, installs: -1, trials: trialCounted ? -1 : 0)
                try await countInFunnel(db, tenantId: install.tenantId, productId: install.productId, day: to, installs: 1, trials: trialCounted ? 1 : 0)
            }
            firstSeen = sighting.at
        }
        let stored = try await db.raw("""
            UPDATE keyless_installs SET state = \(bind: sighting.state), machine_hash = COALESCE(\(bind: sighting.machineHash), machine_hash),
                last_seen_at = \(bind: sighting.at), \(telemetryAssignments(sighting.telemetry))
            WHERE \(key) AND last_seen_at <= \(bind: sighting.at)
              AND (state <> \(bind: sighting.state) OR last_seen_at <= \(bind: sighting.at - KeylessSighting.storeInterval))
            RETURNING instance_id
            """).first()
        if stored != nil {
            try await recordDeviceDay(db, kind: .keyless, deviceId: install.instanceId, device)
        } else {
            try await db.raw("""
                INSERT INTO device_days (tenant_id, product_id, day, kind, device_id, \(telemetryColumns))
                VALUES (\(bind: install.tenantId), \(bind: install.productId), \(bind: day), \(bind: DeviceKind.keyless.rawValue), \(bind: install.instanceId), \(telemetryBinds(sighting.telemetry)))
                ON CONFLICT (tenant_id, product_id, day, kind, device_id) DO NOTHING
                """).run()
        }
        if let trialStart, !trialCounted, try await db.raw("""
            UPDATE keyless_installs SET trial_started_at = \(bind: trialStart) WHERE \(key) AND trial_started_at IS NULL RETURNING instance_id
            """).first() != nil {
            try await countInFunnel(db, tenantId: install.tenantId, productId: install.productId, day: firstSeen.flooringDivided(by: 86_400), installs: 0, trials: 1)
        }
    }

    /// An activation that names the keyless install it converts (`free_tier_instance_id`):
    /// counted once per install, however often it is sent, dated by the first.
    static func recordConversion(_ db: any SQLDatabase, tenantId: String, productId: String, installId: String, licenseId: String, instanceId: String, now: Int64) async throws {
        // An install never stored before (its check-in may still be in the write-behind buffer)
        // is first seen now, and joins today's cohort.
        let inserted = try await db.raw("""
            INSERT INTO keyless_installs (tenant_id, product_id, instance_id, state, machine_hash, first_seen_at, last_seen_at, converted_license_id, converted_at, converted_instance_id)
            VALUES (\(bind: tenantId), \(bind: productId), \(bind: installId), 'free_tier', \(bind: String?.none), \(bind: now), \(bind: now), \(bind: licenseId), \(bind: now), \(bind: instanceId))
            ON CONFLICT (tenant_id, product_id, instance_id) DO NOTHING RETURNING instance_id
            """).first()
        if inserted != nil {
            try await countInFunnel(db, tenantId: tenantId, productId: productId, day: now.flooringDivided(by: 86_400), installs: 1, trials: 0)
            return
        }
        try await db.raw("""
            UPDATE keyless_installs SET converted_license_id = \(bind: licenseId), converted_instance_id = \(bind: instanceId), converted_at = \(bind: now)
            WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND instance_id = \(bind: installId) AND converted_at IS NULL
            """).run()
    }

    private static func countInFunnel(_ db: any SQLDatabase, tenantId: String, productId: String, day: Int64, installs: Int, trials: Int) async throws {
        try await db.raw("""
            INSERT INTO insights_funnel_daily (tenant_id, product_id, day, keyless_installs, trials)
            VALUES (\(bind: tenantId), \(bind: productId), \(bind: day), \(bind: installs), \(bind: trials))
            ON CONFLICT (tenant_id, product_id, day) DO UPDATE SET
                keyless_installs = insights_funnel_daily.keyless_installs + excluded.keyless_installs,
                trials = insights_funnel_daily.trials + excluded.trials
            """).run()
    }

    // MARK: Roll-up and retention

    /// The last day rolled up for good, or nil before the first roll-up.
    func rolledThrough(tenantId: String, productId: String) async throws -> Int64? {
        try await sql.raw("SELECT rolled_through FROM insights_rollups WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)")
            .first(decodingColumn: "rolled_through", as: Int64.self)
    }

    /// The first day any device of the product was seen on, among the days still kept.
    func firstDeviceDay(tenantId: String, productId: String) async throws -> Int64? {
        try await sql.raw("SELECT MIN(day) AS first FROM device_days WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)")
            .first(decodingColumn: "first", as: Int64?.self) ?? nil
    }

    /// Replaces one day's roll-up of one window (every dimension, value and kind), and marks the
    /// product rolled up through that day when `final`. Idempotent: processes that roll up the
    /// same day write the same rows.
    func storeRollup(tenantId: String, productId: String, day: Int64, windowDays: Int, counts: [(dimension: InsightDimension, value: String, kind: DeviceKind, devices: Int)]) async throws {
        try await write { db in
            try await db.raw("""
                DELETE FROM insights_daily WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)
                  AND window_days = \(bind: windowDays) AND day = \(bind: day)
                """).run()
            // A few hundred rows a statement, well inside either database's limit on binds.
            for start in stride(from: 0, to: counts.count, by: 400) {
                let rows = counts[start..<min(start + 400, counts.count)].map { count in
                    "(\(bind: tenantId), \(bind: productId), \(bind: day), \(bind: windowDays), \(bind: count.dimension.rawValue), \(bind: count.value), \(bind: count.kind.rawValue), \(bind: count.devices))" as SQLQueryString
                }.joined(separator: ", ")
                try await db.raw("""
                    INSERT INTO insights_daily (tenant_id, product_id, day, window_days, dimension, value, kind, devices) VALUES \(rows)
                    ON CONFLICT (tenant_id, product_id, window_days, dimension, day, value, kind) DO UPDATE SET devices = excluded.devices
                    """).run()
            }
        }
    }

    func markRolledUp(tenantId: String, productId: String, through day: Int64) async throws {
        try await write { db in
            try await db.raw("""
                INSERT INTO insights_rollups (tenant_id, product_id, rolled_through) VALUES (\(bind: tenantId), \(bind: productId), \(bind: day))
                ON CONFLICT (tenant_id, product_id) DO UPDATE SET rolled_through = excluded.rolled_through
                WHERE insights_rollups.rolled_through < excluded.rolled_through
                """).run()
        }
    }

    /// Deletes one product's per-device days before `day`; answers how many.
    func pruneDeviceDays(tenantId: String, productId: String, before day: Int64) async throws -> Int {
        try await write { db in
            let scope: SQLQueryString = "tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND day < \(bind: day)"
            // Counted, then deleted: RETURNING would carry every deleted row back.
            let count = try await db.raw("SELECT COUNT(*) AS n FROM device_days WHERE \(scope)").first(decodingColumn: "n", as: Int.self) ?? 0
            if count > 0 { try await db.raw("DELETE FROM device_days WHERE \(scope)").run() }
            return count
        }
    }
}

extension [SQLQueryString] {
    func joined(separator: String) -> SQLQueryString {
        var result: SQLQueryString = ""
        for (index, part) in enumerated() {
            if index > 0 { result += SQLQueryString(separator) }
            result += part
        }
        return result
    }
}
