/// `GET /admin/v1/tenants/{t}/products/{p}/insights`: the report as JSON. Absent values are
/// `null`, not left out, so every row has the same members.
struct InsightsBody: Encodable {
    struct ValueRow: Encodable {
        var value: String?
        var devices: Int
        var licensed: Int
        var keyless: Int

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(value, forKey: .value)
            try container.encode(devices, forKey: .devices)
            try container.encode(licensed, forKey: .licensed)
            try container.encode(keyless, forKey: .keyless)
        }
        enum CodingKeys: String, CodingKey { case value, devices, licensed, keyless }
    }

    struct SeriesDay: Encodable {
        var day: String
        var devices: [SeriesValue]
    }

    struct SeriesValue: Encodable {
        var value: String?
        var devices: Int

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(value, forKey: .value)
            try container.encode(devices, forKey: .devices)
        }
        enum CodingKeys: String, CodingKey { case value, devices }
    }

    struct Funnel: Encodable {
        var keylessInstalls: Int
        var trials: Int
        var conversions: Int
        var conversionRate: Double?
        var medianDaysToConvert: Double?
        var convertedAtLeast30DaysAgo: Int
        var stillActiveAfter30Days: Int

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(keylessInstalls, forKey: .keylessInstalls)
            try container.encode(trials, forKey: .trials)
            try container.encode(conversions, forKey: .conversions)
            try container.encode(conversionRate, forKey: .conversionRate)
            try container.encode(medianDaysToConvert, forKey: .medianDaysToConvert)
            try container.encode(convertedAtLeast30DaysAgo, forKey: .convertedAtLeast30DaysAgo)
            try container.encode(stillActiveAfter30Days, forKey: .stillActiveAfter30Days)
        }
        enum CodingKeys: String, CodingKey {
            case keylessInstalls = "keyless_installs", trials, conversions, conversionRate = "conversion_rate"
            case medianDaysToConvert = "median_days_to_convert", convertedAtLeast30DaysAgo = "converted_at_least_30_days_ago"
            case stillActiveAfter30Days = "still_active_after_30_days"
        }
    }

    struct QuietRow: Encodable {
        var license_id: String
        var masked_key: String
        var customer_email: String?
        var devices: Int
        var last_seen_at: Int64
    }

    var by: String
    var from: String
    var to: String
    var window_days: Int
    var retained_from: String
    var active_devices: [ValueRow]
    var series: [SeriesDay]
    var funnel: Funnel
    var quiet_licenses: Int
    var quiet_license_list: [QuietRow]

    init(_ report: InsightsReport) {
        by = report.query.by.rawValue
        from = CivilDay.format(report.query.fromDay)
        to = CivilDay.format(report.query.toDay)
        window_days = report.query.windowDays
        retained_from = CivilDay.format(report.retainedFromDay)
        active_devices = report.activeDevices.map { ValueRow(value: $0.value, devices: $0.devices, licensed: $0.licensed, keyless: $0.keyless) }
        series = report.series.map { day in
            SeriesDay(day: CivilDay.format(day.day), devices: day.devices.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map {
                SeriesValue(value: $0.key == InsightDimension.notSent ? nil : $0.key, devices: $0.value)
            })
        }
        funnel = Funnel(
            keylessInstalls: report.funnel.keylessInstalls, trials: report.funnel.trials, conversions: report.funnel.secondsToConvert.count,
            conversionRate: report.conversionRate.map { ($0 * 10_000).rounded() / 10_000 }, medianDaysToConvert: report.medianDaysToConvert,
            convertedAtLeast30DaysAgo: report.funnel.convertedLongAgo, stillActiveAfter30Days: report.funnel.stillActiveAfter30Days
        )
        quiet_licenses = report.quietTotal
        quiet_license_list = report.quietLicenses.map {
            QuietRow(license_id: $0.licenseId, masked_key: $0.maskedKey, customer_email: $0.customerEmail, devices: $0.devices, last_seen_at: $0.lastSeenAt)
        }
    }
}
