import Foundation

extension SVGChart {
    /// One series of a stacked chart: a name and a value per day.
    struct Stack: Sendable {
        var name: String
        var values: [Int]
    }

    /// Each series' fill: a colour and a mark of its own (solid, hatched, dotted, lined…), so the
    /// stacks tell apart in grey, in print and for readers who do not see the colours.
    private static let fills: [(color: String, mark: String)] = [
        ("#2f5d8a", ""),
        ("#c0612b", "<path d=\"M0,8 L8,0\" stroke=\"#fff\" stroke-width=\"1.6\"/>"),
        ("#4d8b55", "<circle cx=\"4\" cy=\"4\" r=\"1.5\" fill=\"#fff\"/>"),
        ("#8a5a9e", "<path d=\"M0,4 L8,4\" stroke=\"#fff\" stroke-width=\"1.6\"/>"),
        ("#b08d1a", "<path d=\"M0,0 L8,8 M0,8 L8,0\" stroke=\"#fff\" stroke-width=\"1.2\"/>"),
        ("#3b8b8b", "<path d=\"M4,0 L4,8\" stroke=\"#fff\" stroke-width=\"1.6\"/>"),
        ("#9a9a9a", "<path d=\"M0,0 L8,8\" stroke=\"#fff\" stroke-width=\"1\"/>"),
    ]

    /// The most stacks drawn apart; the rest are summed as "Other".
    static let maxStacks = fills.count

    /// Stacked bars per day (`labels[i]` names day `i`), with a legend that shows each fill.
    static func stacked(title: String, stacks: [Stack], labels: [String], id: String, width: Int = 720, height: Int = 240) -> String {
        let left = 44, right = 8, top = 22, bottom = 24
        let legendRows = (stacks.count + 2) / 3
        let legendHeight = legendRows * 18 + 6
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let days = labels.count
        let totals = (0..<days).map { day in stacks.reduce(0) { $0 + (day < $1.values.count ? $1.values[day] : 0) } }
        let peak = niceCeiling(totals.max() ?? 0)
        let slot = Double(plotWidth) / Double(max(days, 1))
        let barWidth = max(1, slot * 0.75)
        var svg = """
            <svg class="chart stacked" viewBox="0 0 \(width) \(height + legendHeight)" width="\(width)" height="\(height + legendHeight)" role="img" \
            aria-label="\(escape(title + ": " + stacks.map { "\($0.name) \($0.values.last ?? 0)" }.joined(separator: ", ") + " on the last day"))" xmlns="http://www.w3.org/2000/svg">
            <defs>

            """
        for (index, fill) in fills.enumerated() {
            svg += "<pattern id=\"\(id)-fill-\(index)\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\"><rect width=\"8\" height=\"8\" fill=\"\(fill.color)\"/>\(fill.mark)</pattern>\n"
        }
        svg += """
            </defs>
            <text class="chart-title" x="\(left)" y="14">\(escape(title))</text>
            <line class="axis" x1="\(left)" y1="\(top + plotHeight)" x2="\(width - right)" y2="\(top + plotHeight)"/>
            <text class="tick" x="\(left - 6)" y="\(top + plotHeight)" text-anchor="end">0</text>

            """
        if peak > 0 {
            svg += "<text class=\"tick\" x=\"\(left - 6)\" y=\"\(top + 8)\" text-anchor=\"end\">\(peak)</text>\n"
            svg += "<line class=\"grid\" x1=\"\(left)\" y1=\"\(top)\" x2=\"\(width - right)\" y2=\"\(top)\"/>\n"
        }
        for day in 0..<days {
            let x = Double(left) + Double(day) * slot + (slot - barWidth) / 2
            var base = Double(top + plotHeight)
            for (index, stack) in stacks.enumerated() {
                let value = day < stack.values.count ? stack.values[day] : 0
                guard value > 0, peak > 0 else { continue }
                let barHeight = Double(plotHeight) * Double(value) / Double(peak)
                base -= barHeight
                svg += "<rect x=\"\(format(x))\" y=\"\(format(base))\" width=\"\(format(barWidth))\" height=\"\(format(barHeight))\" fill=\"url(#\(id)-fill-\(index % fills.count))\" stroke=\"#fff\" stroke-width=\"0.5\">"
                svg += "<title>\(escape(labels[day])) · \(escape(stack.name)): \(value)</title></rect>\n"
            }
            if (days - 1 - day) % 7 == 0 {
                svg += "<text class=\"tick\" x=\"\(format(x + barWidth / 2))\" y=\"\(height - 6)\" text-anchor=\"middle\">\(escape(labels[day]))</text>\n"
            }
        }
        for (index, stack) in stacks.enumerated() {
            let x = left + (index % 3) * ((width - left) / 3)
            let y = height + (index / 3) * 18
            svg += "<rect x=\"\(x)\" y=\"\(y)\" width=\"14\" height=\"14\" fill=\"url(#\(id)-fill-\(index % fills.count))\" stroke=\"#333\" stroke-width=\"0.5\"/>"
            svg += "<text class=\"legend\" x=\"\(x + 20)\" y=\"\(y + 11)\">\(escape(stack.name))</text>\n"
        }
        return svg + "</svg>"
    }

    /// The funnel as horizontal bars, each labelled with its count and its share of the first.
    static func funnel(_ steps: [(name: String, count: Int)], width: Int = 720) -> String {
        let rowHeight = 30, labelWidth = 250
        let first = max(steps.first?.count ?? 0, 1)
        let peak = max(steps.map(\.count).max() ?? 0, 1)
        let height = steps.count * rowHeight + 4
        var svg = """
            <svg class="chart funnel" viewBox="0 0 \(width) \(height)" width="\(width)" height="\(height)" role="img" \
            aria-label="\(escape("Trial funnel: " + steps.map { "\($0.name) \($0.count)" }.joined(separator: ", ")))" xmlns="http://www.w3.org/2000/svg">

            """
        for (index, step) in steps.enumerated() {
            let y = index * rowHeight
            let barWidth = Double(width - labelWidth - 110) * Double(step.count) / Double(peak)
            let share = index == 0 ? "" : String(format: " (%.1f%%)", Double(step.count) * 100 / Double(first))
            svg += "<text class=\"legend\" x=\"0\" y=\"\(y + 19)\">\(escape(step.name))</text>"
            svg += "<rect class=\"bar\" x=\"\(labelWidth)\" y=\"\(y + 5)\" width=\"\(format(barWidth))\" height=\"20\"><title>\(escape(step.name)): \(step.count)</title></rect>"
            svg += "<text class=\"legend\" x=\"\(format(Double(labelWidth) + barWidth + 6))\" y=\"\(y + 19)\">\(step.count)\(share)</text>\n"
        }
        return svg + "</svg>"
    }
}
