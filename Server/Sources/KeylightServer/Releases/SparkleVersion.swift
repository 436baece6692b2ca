/// Versions compared as Sparkle's `SUStandardVersionComparator` does, so the server picks the
/// build Sparkle would: numbers numerically, `1.0b1` before `1.0`, `1.0` equal to `1.0.0`.
enum SparkleVersion {
    private enum Kind { case number, string, separator }

    private static func kind(_ character: Character) -> Kind {
        if character.isASCII && character.isNumber { return .number }
        if character == "." || character.isWhitespace { return .separator }
        return .string
    }

    private static func parts(_ version: String) -> [(Kind, Substring)] {
        var parts: [(Kind, Substring)] = []
        var start = version.startIndex
        var current: Kind?
        for index in version.indices {
            let next = kind(version[index])
            if let kind = current, kind != next || kind == .separator {
                parts.append((kind, version[start..<index]))
                start = index
            }
            current = next
        }
        if let current, start < version.endIndex { parts.append((current, version[start...])) }
        return parts
    }

    /// -1, 0 or 1 as `a` is older than, the same as, or newer than `b`.
    static func compare(_ a: String, _ b: String) -> Int {
        let (left, right) = (parts(a), parts(b))
        for (l, r) in zip(left, right) {
            switch (l.0, r.0) {
            case (.number, .number):
                let (x, y) = (l.1.drop { $0 == "0" }, r.1.drop { $0 == "0" })
                if x.count != y.count { return x.count < y.count ? -1 : 1 }
                if x != y { return x < y ? -1 : 1 }
            case (.string, .string):
                if l.1 != r.1 { return l.1 < r.1 ? -1 : 1 }
            case (.separator, .separator):
                continue
            case (.string, _): return -1
            case (_, .string): return 1
            case (.number, _): return 1
            default: return -1
            }
        }
        guard left.count != right.count else { return 0 }
        // The longer one's remainder decides: a string part (`b1`) makes it older, a non-zero
        // number newer, and zeros and dots change nothing.
        let (rest, sign) = left.count > right.count ? (left.dropFirst(right.count), 1) : (right.dropFirst(left.count), -1)
        for part in rest {
            switch part.0 {
            case .string: return -sign
            case .number where part.1.contains(where: { $0 != "0" }): return sign
            default: continue
            }
        }
        return 0
    }
}
