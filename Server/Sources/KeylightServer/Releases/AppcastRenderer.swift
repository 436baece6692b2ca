/// The parts of a release's appcast item that do not depend on who asks: rendered once per
/// product (``ReleaseService/feed(tenantId:productId:)``), then joined per license with the
/// enclosure link that carries that device's token.
struct AppcastItemParts: Sendable {
    /// `<item>` through the description: title, date, versions, channel, minimum system.
    var head: String
    /// Critical update and phased rollout, for ordinary items only.
    var flags: String
    /// The enclosure's attributes after its URL: length, type, signature, installation type.
    var enclosureAttributes: String
    var artifact: ReleaseArtifact
}

/// Sparkle's appcast format, as its `SUAppcast` and `SUAppcastItem` read it: an un-namespaced
/// `rss` root, `sparkle:` elements in the namespace Sparkle compares by URI, and item children
/// written with the literal `sparkle` prefix (Sparkle matches some of them by prefixed name).
enum AppcastRenderer {
    static let sparkleNamespace = "http://www.andymatuschak.org/xml-namespaces/sparkle"

    /// The artifact Sparkle installs on a Mac: universal first, then Apple silicon, then Intel.
    static func macArtifact(_ artifacts: [ReleaseArtifact]) -> ReleaseArtifact? {
        let mac = artifacts.filter { $0.platform == "darwin" }
        for arch in ["universal", "arm64", "aarch64", "x86_64"] {
            if let match = mac.first(where: { $0.arch == arch }) { return match }
        }
        return mac.first
    }

    static func parts(_ release: Release, artifact: ReleaseArtifact) -> AppcastItemParts {
        var head = "<item><title>" + xml("Version " + release.shortVersion) + "</title>"
        head += "<pubDate>" + rfc822(release.releasedAt) + "</pubDate>"
        head += "<sparkle:version>" + xml(release.version) + "</sparkle:version>"
        head += "<sparkle:shortVersionString>" + xml(release.shortVersion) + "</sparkle:shortVersionString>"
        if release.channel != Release.stableChannel { head += "<sparkle:channel>" + xml(release.channel) + "</sparkle:channel>" }
        if let minimum = release.minSystemVersion {
            // Sparkle's documentation asks for three parts ("13.0.0").
            let padded = minimum.split(separator: ".").count >= 3 ? minimum : minimum + String(repeating: ".0", count: 3 - minimum.split(separator: ".").count)
            head += "<sparkle:minimumSystemVersion>" + padded + "</sparkle:minimumSystemVersion>"
        }
        head += "<description>" + cdata(MarkdownRenderer.html(release.notesMarkdown)) + "</description>"
        var flags = ""
        if release.critical {
            flags += release.criticalBelow.map { "<sparkle:criticalUpdate sparkle:version=\"" + xml($0) + "\"></sparkle:criticalUpdate>" } ?? "<sparkle:criticalUpdate></sparkle:criticalUpdate>"
        }
        if let interval = release.phasedRolloutSeconds { flags += "<sparkle:phasedRolloutInterval>\(interval)</sparkle:phasedRolloutInterval>" }
        var attributes = " length=\"\(artifact.length)\" type=\"application/octet-stream\" sparkle:edSignature=\"" + xml(artifact.edSignature) + "\""
        if let type = (artifact.fileName.flatMap(ArtifactKind.claimed(by:)))?.sparkleInstallationType {
            attributes += " sparkle:installationType=\"" + type + "\""
        }
        return AppcastItemParts(head: head, flags: flags, enclosureAttributes: attributes, artifact: artifact)
    }

    /// An item Sparkle installs.
    static func ordinaryItem(_ parts: AppcastItemParts, url: String) -> String {
        // Appended into one buffer: a chain of `+` copies the item once per piece.
        let link = xml(url)
        var item = ""
        item.reserveCapacity(parts.head.utf8.count + parts.flags.utf8.count + link.utf8.count + parts.enclosureAttributes.utf8.count + 32)
        item += parts.head
        item += parts.flags
        item += "<enclosure url=\""
        item += link
        item += "\""
        item += parts.enclosureAttributes
        item += "/></item>"
        return item
    }

    /// A newer build the license does not cover: no file, a link to where the license is renewed
    /// or upgraded. Sparkle shows it as "Learn More…". Sparkle takes the highest version in a
    /// feed whatever its order, so the item is held back (`minimumAutoupdateVersion`) until the
    /// app runs the newest build it is entitled to, which Sparkle then offers first.
    static func informationalItem(_ parts: AppcastItemParts, link: String, newestCovered: String?) -> String {
        var item = parts.head + "<link>" + xml(link) + "</link>"
        if let newestCovered { item += "<sparkle:minimumAutoupdateVersion>" + xml(newestCovered) + "</sparkle:minimumAutoupdateVersion>" }
        return item + "</item>"
    }

    static func document(title: String, link: String, items: [String]) -> String {
        var body = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<rss version=\"2.0\" xmlns:sparkle=\"\(sparkleNamespace)\">\n<channel>"
        body.reserveCapacity(items.reduce(512) { $0 + $1.utf8.count + 1 })
        body += "<title>" + xml(title) + "</title><link>" + xml(link) + "</link><description>" + xml(title + " updates") + "</description><language>en</language>\n"
        for item in items {
            body += item
            body += "\n"
        }
        return body + "</channel>\n</rss>\n"
    }

    /// Text and attribute values escaped for XML; characters XML 1.0 cannot carry are dropped.
    static func xml(_ text: String) -> String {
        // Links and versions rarely hold anything to escape: a scan of bytes answers most calls.
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == 0x26 || $0 == 0x3C || $0 == 0x3E || $0 == 0x22 || $0 == 0x27 || $0 >= 0xEF }) { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            default:
                if scalar.value >= 0x20 && !(0xFFFE...0xFFFF).contains(scalar.value) { out.unicodeScalars.append(scalar) }
            }
        }
        return out
    }

    /// A CDATA section that cannot be ended early by its content.
    static func cdata(_ text: String) -> String {
        "<![CDATA[" + sanitizedForCDATA(text).replacingOccurrences(of: "]]>", with: "]]]]><![CDATA[>") + "]]>"
    }

    private static func sanitizedForCDATA(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { $0.value >= 0x20 || $0 == "\t" || $0 == "\n" || $0 == "\r" }))
    }

    /// RFC 822 dates as Sparkle parses them (`E, dd MMM yyyy HH:mm:ss Z`, English names, UTC).
    static func rfc822(_ unix: Int64) -> String {
        let days = unix >= 0 ? unix / 86_400 : (unix - 86_399) / 86_400
        let seconds = unix - days * 86_400
        // Civil date from days since 1970 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let weekday = weekdays[Int(((days % 7) + 7) % 7)]
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(weekday), \(two(day)) \(months[Int(month - 1)]) \(year) \(two(seconds / 3_600)):\(two(seconds / 60 % 60)):\(two(seconds % 60)) +0000"
    }

    /// RFC 3339 (`pub_date` of the JSON update check).
    static func rfc3339(_ unix: Int64) -> String {
        let parts = rfc822(unix).split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let month = (months.firstIndex(of: String(parts[2])) ?? 0) + 1
        return "\(parts[3])-\(month < 10 ? "0" : "")\(month)-\(parts[1])T\(parts[4])Z"
    }
}
