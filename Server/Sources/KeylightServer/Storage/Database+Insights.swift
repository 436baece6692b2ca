import SQLKit

/// A device's telemetry on one day, as the flush writes it to `device_days`.
struct DeviceSighting: Hashable, Sendable {
    var tenantId: String
    var productId: String
    var day: Int64
    var telemetry: Telemetry
}

/// How many devices, last seen in a window with these values, of one kind.
struct DeviceCombination: Sendable, Equatable {
    var kind: DeviceKind
    var telemetry: Telemetry
    var devices: Int
}

/// A licensed instance, or a keyless (trial or free-tier) install.
enum DeviceKind: String, Sendable, CaseIterable {
    case licensed, keyless
}

/// The funnel's raw figures for installs first seen in a range of days.
struct FunnelFigures: Sendable, Equatable {
    var keylessInstalls = 0
    var trials = 0
    /// Seconds from first sight to conversion, one per converted install.
    var secondsToConvert: [Int64] = []
    /// Converted at least 30 days before `now`, and of those, still active 30 days on.
    var convertedLongAgo = 0
    var stillActiveAfter30Days = 0
}

/// A license whose devices went quiet.
struct QuietLicense: Sendable, Equatable {
    var licenseId: String
    var maskedKey: String
    var customerEmail: String?
    var devices: Int
    var lastSeenAt: Int64
}

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

    // MARK: Reads

    /// Every device seen in `fromDay...toDay`, by the values of the last day it was seen in it,
    /// counted per combination of values (far fewer rows than devices).
    func deviceCombinations(tenantId: String, productId: String, fromDay: Int64, toDay: Int64) async throws -> [DeviceCombination] {
        let columns = InsightDimension.allCases.map { "s.\(ident: $0.column)" as SQLQueryString }.joined(separator: ", ")
        let rows = try await sql.raw("""
            SELECT s.kind AS kind, \(columns), COUNT(*) AS n
            FROM device_days s
            JOIN (SELECT kind, device_id, MAX(day) AS last_day FROM device_days
                  WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND day >= \(bind: fromDay) AND day <= \(bind: toDay)
                  GROUP BY kind, device_id) m
              ON s.kind = m.kind AND s.device_id = m.device_id AND s.day = m.last_day
            WHERE s.tenant_id = \(bind: tenantId) AND s.product_id = \(bind: productId)
            GROUP BY s.kind, \(columns)
            """).all()
        return try rows.compactMap { row in
            guard let kind = DeviceKind(rawValue: try row.decode(column: "kind", as: String.self)) else { return nil }
            func text(_ dimension: InsightDimension) throws -> String? { try row.decodeNil(column: dimension.column) ? nil : try row.decode(column: dimension.column, as: String.self) }
            let telemetry = Telemetry(
                appVersion: try text(.appVersion), sdkVersion: try text(.sdkVersion), sdk: try text(.sdk), platform: try text(.platform),
                osVersion: try text(.osVersion), arch: try text(.arch), cpuCores: try text(.cpuCores), memory: try text(.memory)
            )
            return DeviceCombination(kind: kind, telemetry: telemetry, devices: try row.decode(column: "n", as: Int.self))
        }
    }

    /// Rolled-up device counts of one dimension and window, per day and value, summed over kinds.
    func insightSeries(tenantId: String, productId: String, dimension: InsightDimension, windowDays: Int, fromDay: Int64, toDay: Int64) async throws -> [Int64: [String: Int]] {
        let rows = try await sql.raw("""
            SELECT day, value, CAST(SUM(devices) AS BIGINT) AS n FROM insights_daily
            WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND window_days = \(bind: windowDays)
              AND dimension = \(bind: dimension.rawValue) AND day >= \(bind: fromDay) AND day <= \(bind: toDay)
            GROUP BY day, value
            """).all()
        var series: [Int64: [String: Int]] = [:]
        for row in rows {
            series[try row.decode(column: "day", as: Int64.self), default: [:]][try row.decode(column: "value", as: String.self)] = try row.decode(column: "n", as: Int.self)
        }
        return series
    }

    /// The funnel of the installs first seen in `fromDay...toDay`.
    func funnel(tenantId: String, productId: String, fromDay: Int64, toDay: Int64, now: Int64) async throws -> FunnelFigures {
        var figures = FunnelFigures()
        if let row = try await sql.raw("""
            SELECT CAST(COALESCE(SUM(keyless_installs), 0) AS BIGINT) AS installs, CAST(COALESCE(SUM(trials), 0) AS BIGINT) AS trials FROM insights_funnel_daily
            WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND day >= \(bind: fromDay) AND day <= \(bind: toDay)
            """).first() {
            figures.keylessInstalls = try row.decode(column: "installs", as: Int.self)
            figures.trials = try row.decode(column: "trials", as: Int.self)
        }
        let cutoff = now - 30 * 86_400
        let rows = try await sql.raw("""
            SELECT k.first_seen_at AS first_seen_at, k.converted_at AS converted_at,
                   i.active AS active, COALESCE(i.last_validated_at, i.activated_at) AS last_seen
            FROM keyless_installs k LEFT JOIN instances i ON i.id = k.converted_instance_id
            WHERE k.tenant_id = \(bind: tenantId) AND k.product_id = \(bind: productId) AND k.converted_at IS NOT NULL
              AND k.first_seen_at >= \(bind: fromDay * 86_400) AND k.first_seen_at < \(bind: (toDay + 1) * 86_400)
            """).all()
        for row in rows {
            let converted = try row.decode(column: "converted_at", as: Int64.self)
            figures.secondsToConvert.append(max(0, converted - (try row.decode(column: "first_seen_at", as: Int64.self))))
            guard converted <= cutoff else { continue }
            figures.convertedLongAgo += 1
            let active = try row.decodeNil(column: "active") ? false : try row.decode(column: "active", as: Bool.self)
            let lastSeen = try row.decodeNil(column: "last_seen") ? nil : try row.decode(column: "last_seen", as: Int64.self)
            if active, let lastSeen, lastSeen >= converted + 30 * 86_400 { figures.stillActiveAfter30Days += 1 }
        }
        return figures
    }

    /// Licenses in force (active, not expired) with devices online, none of which has been seen
    /// (validated, or activated) since `before`. Devices activated offline never call, so they
    /// are not counted either way.
    func quietLicenses(tenantId: String, productId: String, before: Int64, now: Int64, limit: Int) async throws -> (licenses: [QuietLicense], total: Int) {
        let quiet: SQLQueryString = """
            FROM licenses l JOIN instances i ON i.license_id = l.id AND i.active AND i.device_key IS NULL
            WHERE l.tenant_id = \(bind: tenantId) AND l.product_id = \(bind: productId) AND l.status = 'active'
              AND (l.expires_at IS NULL OR l.expires_at > \(bind: now))
            GROUP BY l.id, l.masked_key, l.customer_email
            HAVING MAX(COALESCE(i.last_validated_at, i.activated_at)) < \(bind: before)
            """
        let total = try await sql.raw("SELECT COUNT(*) AS n FROM (SELECT l.id \(quiet)) q").first(decodingColumn: "n", as: Int.self) ?? 0
        let rows = try await sql.raw("""
            SELECT l.id AS id, l.masked_key AS masked_key, l.customer_email AS customer_email, COUNT(*) AS devices,
                   MAX(COALESCE(i.last_validated_at, i.activated_at)) AS last_seen
            \(quiet)
            ORDER BY last_seen, l.id LIMIT \(literal: limit)
            """).all()
        let licenses = try rows.map { row in
            QuietLicense(
                licenseId: try row.decode(column: "id", as: String.self), maskedKey: try row.decode(column: "masked_key", as: String.self),
                customerEmail: try row.decodeNil(column: "customer_email") ? nil : try row.decode(column: "customer_email", as: String.self),
                devices: try row.decode(column: "devices", as: Int.self), lastSeenAt: try row.decode(column: "last_seen", as: Int64.self)
            )
        }
        return (licenses, total)
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
