import KeylightCore
import Logging

/// Who runs a product's app, on what, and how its trials convert: the daily roll-ups (kept for
/// good), the pruning of per-device days (kept `retentionDays`), and the figures the admin API
/// and the dashboard show, computed the same way for both.
struct InsightsService: Sendable {
    let database: Database
    let clock: any WallClock
    /// Days of `device_days` kept; at least the longest window (30) plus today.
    let retentionDays: Int64

    /// Days rolled up for one product in one call, at most: a server that was off for a year
    /// catches up over a few ticks instead of in one long one.
    static let maxDaysPerRollup: Int64 = 120
    /// Days a report counts live, at most (the rest come from the roll-up).
    static let maxLiveDays: Int64 = 3
    /// Licenses without a validate for this long are quiet.
    static let quietSeconds: Int64 = 30 * 86_400

    init(database: Database, clock: any WallClock, retentionDays: Int64 = 90) {
        self.database = database
        self.clock = clock
        self.retentionDays = max(retentionDays, 31)
    }

    var today: Int64 { clock.unixSeconds.flooringDivided(by: 86_400) }

    /// The first day whose per-device rows are still kept.
    var retainedFromDay: Int64 { today - retentionDays + 1 }

    // MARK: Roll-up and retention

    /// Rolls every product up through yesterday, then prunes its per-device days past retention
    /// (never a day a roll-up still needs). A product whose roll-up fails keeps its days; the
    /// others are pruned all the same.
    func rollUpAndPrune(logger: Logger) async {
        let products: [Product]
        do {
            var all: [Product] = []
            for tenant in try await database.tenants() { all += try await database.products(tenantId: tenant.id) }
            products = all
        } catch {
            logger.debug("insights roll-up could not list products", metadata: ["error": "\(error)"])
            return
        }
        for product in products {
            do {
                try await rollUp(tenantId: product.tenantId, productId: product.id)
                // The 30-day window of the first day not yet rolled up reaches back 29 days.
                let rolled = try await database.rolledThrough(tenantId: product.tenantId, productId: product.id)
                let keepFrom = min(retainedFromDay, (rolled ?? .max - 30) + 1 - 29)
                let pruned = try await database.pruneDeviceDays(tenantId: product.tenantId, productId: product.id, before: keepFrom)
                if pruned > 0 { logger.debug("pruned per-device days", metadata: ["tenant": "\(product.tenantId)", "product": "\(product.id)", "rows": "\(pruned)"]) }
            } catch {
                logger.debug("insights roll-up failed", metadata: ["tenant": "\(product.tenantId)", "product": "\(product.id)", "error": "\(error)"])
            }
        }
    }

    /// The last day that may be rolled up for good: yesterday, once today is an hour old (a
    /// sighting of yesterday's last seconds may still be on its way through a buffer until then).
    var lastFinalDay: Int64 { (clock.unixSeconds - Self.settleSeconds).flooringDivided(by: 86_400) - 1 }
    static let settleSeconds: Int64 = 3_600

    /// Rolls one product up, for good, through ``lastFinalDay``; at most ``maxDaysPerRollup`` days a call.
    func rollUp(tenantId: String, productId: String) async throws {
        let through = lastFinalDay
        let start: Int64
        if let rolled = try await database.rolledThrough(tenantId: tenantId, productId: productId) {
            start = rolled + 1
        } else if let first = try await database.firstDeviceDay(tenantId: tenantId, productId: productId) {
            start = first
        } else {
            return
        }
        guard start <= through else { return }
        let last = min(through, start + Self.maxDaysPerRollup - 1)
        for day in start...last {
            for window in InsightsQuery.windows {
                try await database.storeRollup(tenantId: tenantId, productId: productId, day: day, windowDays: window, counts: try await counts(tenantId: tenantId, productId: productId, day: day, windowDays: window))
            }
            try await database.markRolledUp(tenantId: tenantId, productId: productId, through: day)
        }
    }

    /// Devices seen in the `windowDays` days ending with `day`, per dimension, value and kind.
    private func counts(tenantId: String, productId: String, day: Int64, windowDays: Int) async throws -> [(dimension: InsightDimension, value: String, kind: DeviceKind, devices: Int)] {
        let combinations = try await database.deviceCombinations(tenantId: tenantId, productId: productId, fromDay: day - Int64(windowDays) + 1, toDay: day)
        var counts: [(dimension: InsightDimension, value: String, kind: DeviceKind, devices: Int)] = []
        for dimension in InsightDimension.allCases {
            for row in Self.tally(combinations, by: dimension) {
                if row.licensed > 0 { counts.append((dimension, row.value ?? InsightDimension.notSent, .licensed, row.licensed)) }
                if row.keyless > 0 { counts.append((dimension, row.value ?? InsightDimension.notSent, .keyless, row.keyless)) }
            }
        }
        return counts
    }

    // MARK: Figures

    /// Everything the admin API and the dashboard show for one product and query.
    func report(tenantId: String, productId: String, query: InsightsQuery) async throws -> InsightsReport {
        try await rollUp(tenantId: tenantId, productId: productId)
        let now = clock.unixSeconds
        let combinations = try await database.deviceCombinations(tenantId: tenantId, productId: productId, fromDay: query.fromDay, toDay: query.toDay)
        let funnel = try await database.funnel(tenantId: tenantId, productId: productId, fromDay: query.fromDay, toDay: query.toDay, now: now)
        let quiet = try await database.quietLicenses(tenantId: tenantId, productId: productId, before: now - Self.quietSeconds, now: now, limit: 500)
        return InsightsReport(
            query: query, activeDevices: Self.tally(combinations, by: query.by),
            series: try await series(tenantId: tenantId, productId: productId, query: query),
            funnel: funnel, quietLicenses: quiet.licenses, quietTotal: quiet.total, retainedFromDay: retainedFromDay
        )
    }

    /// Devices per day and value for the query's window: rolled-up days from the roll-up, the
    /// days after it (today) counted live.
    private func series(tenantId: String, productId: String, query: InsightsQuery) async throws -> [InsightsReport.Day] {
        var byDay = try await database.insightSeries(
            tenantId: tenantId, productId: productId, dimension: query.by, windowDays: query.windowDays, fromDay: query.fromDay, toDay: query.toDay
        )
        // Days the roll-up has not reached (today, and yesterday in its first hour; more only while
        // a roll-up catches up): counted live, at most `maxLiveDays` of them a request.
        let rolled = try await database.rolledThrough(tenantId: tenantId, productId: productId) ?? (lastFinalDay)
        let liveFrom = max(query.fromDay, rolled + 1, today - Self.maxLiveDays + 1)
        if liveFrom <= min(query.toDay, today) {
            for day in liveFrom...min(query.toDay, today) {
                let combinations = try await database.deviceCombinations(tenantId: tenantId, productId: productId, fromDay: day - Int64(query.windowDays) + 1, toDay: day)
                byDay[day] = Dictionary(Self.tally(combinations, by: query.by).map { ($0.value ?? InsightDimension.notSent, $0.devices) }, uniquingKeysWith: +)
            }
        }
        return (query.fromDay...query.toDay).map { InsightsReport.Day(day: $0, devices: byDay[$0] ?? [:]) }
    }

    /// Devices per value of `dimension`, most first (then by value), licensed and keyless apart.
    static func tally(_ combinations: [DeviceCombination], by dimension: InsightDimension) -> [InsightsReport.ValueCount] {
        var counts: [String: InsightsReport.ValueCount] = [:]
        for combination in combinations {
            let value = combination.telemetry[dimension]
            let key = value ?? InsightDimension.notSent
            var row = counts[key] ?? InsightsReport.ValueCount(value: value, licensed: 0, keyless: 0)
            switch combination.kind {
            case .licensed: row.licensed += combination.devices
            case .keyless: row.keyless += combination.devices
            }
            counts[key] = row
        }
        return counts.values.sorted { $0.devices != $1.devices ? $0.devices > $1.devices : ($0.value ?? "") < ($1.value ?? "") }
    }
}

/// One product's insights for one query.
struct InsightsReport: Sendable {
    struct ValueCount: Sendable, Equatable {
        /// nil: devices that did not send the field.
        var value: String?
        var licensed: Int
        var keyless: Int
        var devices: Int { licensed + keyless }
    }

    struct Day: Sendable, Equatable {
        var day: Int64
        /// Devices per value ("" for not sent).
        var devices: [String: Int]
    }

    var query: InsightsQuery
    var activeDevices: [ValueCount]
    var series: [Day]
    var funnel: FunnelFigures
    var quietLicenses: [QuietLicense]
    var quietTotal: Int
    var retainedFromDay: Int64

    /// Conversions over keyless installs of the cohort, or nil with no installs.
    var conversionRate: Double? {
        funnel.keylessInstalls == 0 ? nil : Double(funnel.secondsToConvert.count) / Double(funnel.keylessInstalls)
    }

    /// The funnel's figures in the order shown, as the CSV names them and as a person reads them.
    var funnelMetrics: [(key: String, label: String, value: String)] {
        [
            ("keyless_installs", "Keyless installs", String(funnel.keylessInstalls)),
            ("trials", "Trials", String(funnel.trials)),
            ("conversions", "Conversions", String(funnel.secondsToConvert.count)),
            ("conversion_rate", "Conversion rate (conversions ÷ keyless installs)", conversionRate.map { String(($0 * 10_000).rounded() / 10_000) } ?? ""),
            ("median_days_to_convert", "Median days to convert", medianDaysToConvert.map { String($0) } ?? ""),
            ("converted_at_least_30_days_ago", "Converted at least 30 days ago", String(funnel.convertedLongAgo)),
            ("still_active_after_30_days", "… still active 30 days after converting", String(funnel.stillActiveAfter30Days)),
        ]
    }

    /// The median time from first sight to conversion, in days (one decimal), or nil with none.
    var medianDaysToConvert: Double? {
        let sorted = funnel.secondsToConvert.sorted()
        guard !sorted.isEmpty else { return nil }
        let middle = sorted.count / 2
        let seconds = sorted.count % 2 == 1 ? Double(sorted[middle]) : Double(sorted[middle - 1] + sorted[middle]) / 2
        return (seconds / 86_400 * 10).rounded() / 10
    }
}
