import SQLKit

extension Database {
    /// Every device seen in `fromDay...toDay`, by the values of the last day it was seen in it,
    /// counted per combination of values (far fewer rows than devices). A keyless install that
    /// converted is the instance it became: one device, counted by the kind it was last seen as
    /// (licensed when both were seen on its last day).
    func deviceCombinations(tenantId: String, productId: String, fromDay: Int64, toDay: Int64) async throws -> [DeviceCombination] {
        let columns = InsightDimension.allCases.map { "s.\(ident: $0.column)" as SQLQueryString }.joined(separator: ", ")
        let inner = InsightDimension.allCases.map { "d.\(ident: $0.column)" as SQLQueryString }.joined(separator: ", ")
        let rows = try await sql.raw("""
            SELECT s.kind AS kind, \(columns), COUNT(*) AS n
            FROM (SELECT d.kind AS kind, \(inner), ROW_NUMBER() OVER (
                      PARTITION BY COALESCE(k.converted_instance_id, d.device_id), CASE WHEN k.converted_instance_id IS NULL THEN d.kind ELSE 'licensed' END
                      ORDER BY d.day DESC, CASE WHEN d.kind = 'licensed' THEN 0 ELSE 1 END) AS latest
                  FROM device_days d
                  LEFT JOIN keyless_installs k ON d.kind = 'keyless' AND k.tenant_id = d.tenant_id AND k.product_id = d.product_id AND k.instance_id = d.device_id
                  WHERE d.tenant_id = \(bind: tenantId) AND d.product_id = \(bind: productId) AND d.day >= \(bind: fromDay) AND d.day <= \(bind: toDay)) s
            WHERE s.latest = 1
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
}
