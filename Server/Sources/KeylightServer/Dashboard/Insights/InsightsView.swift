/// `insights.mustache`.
struct InsightsView: Sendable {
    struct Choice: Sendable {
        var value: String
        var title: String
        var selected: Bool
    }

    struct Window: Sendable {
        var days: Int
        var label: String
        var selected: Bool
    }

    struct DeviceRow: Sendable {
        var label: String
        var devices: Int
        var licensed: Int
        var keyless: Int
    }

    struct FunnelRow: Sendable {
        var name: String
        var value: String
    }

    struct QuietRow: Sendable {
        var licenseId: String
        var maskedKey: String
        var email: String
        var devices: Int
        var lastSeen: String
    }

    var chrome: Chrome
    var tenantId: String
    var tenantName: String
    var productId: String
    var productName: String
    var from: String
    var to: String
    var retainedFrom: String
    var byTitle: String
    var dimensions: [Choice]
    var windows: [Window]
    var devices: [DeviceRow]
    var seriesChart: String
    var funnelChart: String
    var funnelRows: [FunnelRow]
    var quiet: [QuietRow]
    var quietTotal: Int
    /// The CSV link for this query, without its `table`.
    var csvBase: String

    /// How a value that was not sent reads.
    static let notSentLabel = "(not sent)"

    init(chrome: Chrome, tenant: Tenant, product: Product, report: InsightsReport) {
        let query = report.query
        self.chrome = chrome
        tenantId = tenant.id
        tenantName = tenant.name
        productId = product.id
        productName = product.name
        from = CivilDay.format(query.fromDay)
        to = CivilDay.format(query.toDay)
        retainedFrom = CivilDay.format(report.retainedFromDay)
        byTitle = query.by.title
        dimensions = InsightDimension.allCases.map { Choice(value: $0.rawValue, title: $0.title, selected: $0 == query.by) }
        windows = InsightsQuery.windows.map { Window(days: $0, label: $0 == 1 ? "day" : "\($0) days", selected: $0 == query.windowDays) }
        devices = report.activeDevices.map { DeviceRow(label: $0.value ?? Self.notSentLabel, devices: $0.devices, licensed: $0.licensed, keyless: $0.keyless) }
        seriesChart = Self.seriesChart(report)
        let funnel = report.funnel
        funnelChart = SVGChart.funnel([
            ("Keyless installs", funnel.keylessInstalls), ("Trials", funnel.trials), ("Converted (activated a license)", funnel.secondsToConvert.count),
            ("Still active 30 days after", funnel.stillActiveAfter30Days),
        ])
        funnelRows = report.funnelMetrics.map { metric in
            let value = metric.key == "conversion_rate" ? report.conversionRate.map(Self.percent) : (metric.value.isEmpty ? nil : metric.value)
            return FunnelRow(name: metric.label, value: value ?? "—")
        }
        quiet = report.quietLicenses.map {
            QuietRow(licenseId: $0.licenseId, maskedKey: $0.maskedKey, email: $0.customerEmail ?? "", devices: $0.devices, lastSeen: DashboardFormat.time($0.lastSeenAt))
        }
        quietTotal = report.quietTotal
        csvBase = "/dashboard/t/\(tenant.id)/p/\(product.id)/insights.csv?\(query.queryString)"
    }

    static func percent(_ rate: Double) -> String {
        "\((rate * 1000).rounded() / 10) %"
    }

    /// Devices per day, stacked by value: the most common values over the range each their own
    /// stack, the rest summed as "Other".
    static func seriesChart(_ report: InsightsReport) -> String {
        var totals: [String: Int] = [:]
        for day in report.series { for (value, devices) in day.devices { totals[value, default: 0] += devices } }
        let ranked = totals.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map(\.key)
        let shown = ranked.count <= SVGChart.maxStacks ? ranked : Array(ranked.prefix(SVGChart.maxStacks - 1))
        var stacks = shown.map { value in
            SVGChart.Stack(name: value == InsightDimension.notSent ? notSentLabel : value, values: report.series.map { $0.devices[value] ?? 0 })
        }
        if shown.count < ranked.count {
            let rest = Set(ranked.dropFirst(shown.count))
            stacks.append(SVGChart.Stack(name: "Other (\(rest.count))", values: report.series.map { day in day.devices.filter { rest.contains($0.key) }.values.reduce(0, +) }))
        }
        let window = report.query.windowDays == 1 ? "that day" : "the \(report.query.windowDays) days to each day"
        return SVGChart.stacked(
            title: "Devices seen in \(window), by \(report.query.by.title.lowercased())", stacks: stacks,
            labels: report.series.map { DashboardFormat.shortDay($0.day) }, id: "series"
        )
    }
}
