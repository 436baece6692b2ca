/// Inline SVG pictures for the dashboard: drawn on the server, so they need no script and no
/// third-party code, and read well without colour (every bar carries a `<title>` and the
/// picture an `aria-label`).
enum SVGChart {
    /// A bar per day. `labels[i]` names `values[i]`; every seventh label is drawn under the axis.
    static func bars(title: String, values: [Int], labels: [String], cssClass: String, width: Int = 640, height: Int = 170) -> String {
        let left = 44, right = 8, top = 22, bottom = 24
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let peak = niceCeiling(values.max() ?? 0)
        let slot = Double(plotWidth) / Double(max(values.count, 1))
        let barWidth = max(1, slot * 0.7)
        let total = values.reduce(0, +)
        var svg = """
            <svg class="chart \(cssClass)" viewBox="0 0 \(width) \(height)" width="\(width)" height="\(height)" role="img" \
            aria-label="\(escape(title)): \(total) in \(values.count) days" xmlns="http://www.w3.org/2000/svg">
            <text class="chart-title" x="\(left)" y="14">\(escape(title)) · \(total) in \(values.count) days</text>
            <line class="axis" x1="\(left)" y1="\(top + plotHeight)" x2="\(width - right)" y2="\(top + plotHeight)"/>
            <text class="tick" x="\(left - 6)" y="\(top + plotHeight)" text-anchor="end">0</text>

            """
        if peak > 0 {
            svg += """
                <text class="tick" x="\(left - 6)" y="\(top + 8)" text-anchor="end">\(peak)</text>
                <line class="grid" x1="\(left)" y1="\(top)" x2="\(width - right)" y2="\(top)"/>

                """
        }
        for (index, value) in values.enumerated() {
            let barHeight = peak == 0 ? 0 : Double(plotHeight) * Double(value) / Double(peak)
            let x = Double(left) + Double(index) * slot + (slot - barWidth) / 2
            let y = Double(top + plotHeight) - barHeight
            let label = index < labels.count ? labels[index] : ""
            svg += "<rect class=\"bar\" x=\"\(format(x))\" y=\"\(format(y))\" width=\"\(format(barWidth))\" height=\"\(format(barHeight))\">"
            svg += "<title>\(escape(label)): \(value)</title></rect>\n"
            // Every seventh day counted back from the last, so the newest day is always labelled.
            if (values.count - 1 - index) % 7 == 0 {
                svg += "<text class=\"tick\" x=\"\(format(x + barWidth / 2))\" y=\"\(height - 6)\" text-anchor=\"middle\">\(escape(label))</text>\n"
            }
        }
        return svg + "</svg>"
    }

    /// One stacked bar of license states, with a legend.
    static func statuses(_ counts: LicenseStatusCounts, width: Int = 640) -> String {
        let parts: [(String, String, Int)] = [
            ("Active", "active", counts.active), ("Expired", "expired", counts.expired),
            ("Suspended", "suspended", counts.suspended), ("Revoked", "revoked", counts.revoked),
        ]
        let total = max(counts.total, 1)
        var svg = """
            <svg class="chart statuses" viewBox="0 0 \(width) 58" width="\(width)" height="58" role="img" \
            aria-label="Licenses: \(parts.map { "\($0.2) \($0.0.lowercased())" }.joined(separator: ", "))" xmlns="http://www.w3.org/2000/svg">

            """
        var x = 0.0
        for (name, cssClass, value) in parts where value > 0 {
            let w = Double(width) * Double(value) / Double(total)
            svg += "<rect class=\"status-\(cssClass)\" x=\"\(format(x))\" y=\"0\" width=\"\(format(w))\" height=\"24\"><title>\(name): \(value)</title></rect>\n"
            x += w
        }
        if counts.total == 0 { svg += "<rect class=\"status-none\" x=\"0\" y=\"0\" width=\"\(width)\" height=\"24\"><title>No licenses yet</title></rect>\n" }
        var legendX = 0
        for (name, cssClass, value) in parts {
            svg += "<rect class=\"status-\(cssClass)\" x=\"\(legendX)\" y=\"38\" width=\"12\" height=\"12\"/>"
            svg += "<text class=\"legend\" x=\"\(legendX + 17)\" y=\"49\">\(name) \(value)</text>\n"
            legendX += 150
        }
        return svg + "</svg>"
    }

    /// 0 → 0; otherwise the next of 1, 2, 5 × 10ⁿ at or above `value`, so the axis reads cleanly.
    static func niceCeiling(_ value: Int) -> Int {
        guard value > 0 else { return 0 }
        var magnitude = 1
        while magnitude * 10 <= value { magnitude *= 10 }
        for step in [1, 2, 5, 10] where step * magnitude >= value { return step * magnitude }
        return 10 * magnitude
    }

    static func escape(_ text: String) -> String { HTMLText.escape(text) }

    static func format(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}
