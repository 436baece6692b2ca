import Foundation

/// How the dashboard writes times, days and CSV.
enum DashboardFormat {
    private static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    /// `2026-11-22 14:05 UTC`, or `—` for none.
    /// `2027-11-22` (UTC).
    static func day(_ unix: Int64) -> String {
        let c = utc.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: TimeInterval(unix)))
        return String(format: "%04d-%02d-%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0)
    }

    static func time(_ unix: Int64?) -> String {
        guard let unix else { return "—" }
        let c = utc.dateComponents([.year, .month, .day, .hour, .minute], from: Date(timeIntervalSince1970: TimeInterval(unix)))
        return String(format: "%04d-%02d-%02d %02d:%02d UTC", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0)
    }

    /// `11-22` for a day number (days since 1970, UTC).
    static func shortDay(_ day: Int64) -> String {
        let c = utc.dateComponents([.month, .day], from: Date(timeIntervalSince1970: TimeInterval(day * 86_400)))
        return String(format: "%02d-%02d", c.month ?? 0, c.day ?? 0)
    }

    /// ISO 8601 (`2026-11-22T14:05:00Z`) for CSV, empty for none.
    static func iso(_ unix: Int64?) -> String {
        guard let unix else { return "" }
        let c = utc.dateComponents([.year, .month, .day, .hour, .minute, .second], from: Date(timeIntervalSince1970: TimeInterval(unix)))
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0, c.second ?? 0)
    }

    /// One CSV field (RFC 4180 quoting). Fields a spreadsheet would run as a formula get a
    /// leading apostrophe: customer emails are user input.
    static func csvField(_ value: String) -> String {
        var text = value
        if let first = text.first, "=+-@\t\r".contains(first) { text = "'" + text }
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func csvLine(_ fields: [String]) -> String {
        fields.map(csvField).joined(separator: ",") + "\r\n"
    }
}
