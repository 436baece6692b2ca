import Hummingbird

/// The query string of the insights (admin API, its CSV and the dashboard page), checked:
/// `by`, `from`, `to` (`YYYY-MM-DD`, UTC, both included; the last 30 days by default) and
/// `window` (1, 7 or 30 days, for the series). Any other parameter is a 400 that names it.
struct InsightsQuery: Sendable, Equatable {
    var by: InsightDimension = .appVersion
    var fromDay: Int64
    var toDay: Int64
    var windowDays = 7

    static let windows = [1, 7, 30]
    /// The longest range one request may ask for: the work is bounded by it.
    static let maxDays: Int64 = 366

    /// `names` are the parameters present; `value` reads one. `extra` names the caller's own
    /// parameters (the CSV's `table`), read elsewhere.
    init(names: [String], reading value: (String) -> String?, today: Int64, extra: Set<String> = []) throws(APIError) {
        let known: Set<String> = ["by", "from", "to", "window"]
        if let unknown = names.first(where: { !known.contains($0) && !extra.contains($0) }) { throw .unknownField(unknown) }
        var seen = Set<String>()
        if let repeated = names.first(where: { !seen.insert($0).inserted }) { throw .invalidRequest("\(repeated) is given more than once.") }
        func present(_ name: String) -> String? { value(name).flatMap { $0.isEmpty ? nil : $0 } }
        if let by = present("by") { self.by = try InsightDimension(query: by) }
        func day(_ name: String) throws(APIError) -> Int64? {
            guard let text = present(name) else { return nil }
            guard let day = CivilDay.parse(text) else { throw .invalidRequest("\(name) must be a date as YYYY-MM-DD.") }
            return day
        }
        toDay = try day("to") ?? today
        fromDay = try day("from") ?? (toDay - 29)
        guard fromDay <= toDay else { throw .invalidRequest("from must not be after to.") }
        guard toDay - fromDay < Self.maxDays else { throw .invalidRequest("from and to may be at most \(Self.maxDays) days apart.") }
        if let text = present("window") {
            guard text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }), let window = Int(text), Self.windows.contains(window) else {
                throw .invalidRequest("window must be 1, 7 or 30.")
            }
            windowDays = window
        }
    }

    /// The same query as a query string, for links between the page and its exports.
    var queryString: String {
        "by=\(by.rawValue)&from=\(CivilDay.format(fromDay))&to=\(CivilDay.format(toDay))&window=\(windowDays)"
    }
}

extension InsightsQuery {
    /// The query of an HTTP request.
    init(request: Request, today: Int64, extra: Set<String>) throws(APIError) {
        let parameters = request.uri.queryParameters
        try self.init(names: parameters.map { String($0.key) }, reading: { parameters.get($0) }, today: today, extra: extra)
    }
}
