import Foundation

/// Release notes from Markdown to HTML that is safe to show anywhere (Sparkle's release notes
/// view, the dashboard, the account page): a small subset (headings, paragraphs, lists, emphasis,
/// inline code, code blocks, and links to http(s) and mailto), and every other character escaped.
/// Raw HTML in the Markdown is shown as text, never passed through.
enum MarkdownRenderer {
    static func html(_ markdown: String) -> String {
        var output: [String] = []
        var paragraph: [String] = []
        var list: [String] = []
        var ordered = false
        var code: [String]?

        func flushParagraph() {
            if !paragraph.isEmpty { output.append("<p>" + paragraph.map(inline).joined(separator: "\n") + "</p>") }
            paragraph = []
        }
        func flushList() {
            if !list.isEmpty {
                let tag = ordered ? "ol" : "ul"
                output.append("<\(tag)>" + list.map { "<li>" + inline($0) + "</li>" }.joined() + "</\(tag)>")
            }
            list = []
        }

        for rawLine in markdown.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(rawLine)
            if var lines = code {
                if line.trimmingPrefix(" ").hasPrefix("```") {
                    output.append("<pre><code>" + escape(lines.joined(separator: "\n")) + "</code></pre>")
                    code = nil
                } else {
                    lines.append(line)
                    code = lines
                }
                continue
            }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("```") {
                flushParagraph(); flushList()
                code = []
            } else if trimmed.isEmpty {
                flushParagraph(); flushList()
            } else if let level = heading(trimmed) {
                flushParagraph(); flushList()
                let text = trimmed.dropFirst(level).trimmingCharacters(in: .whitespaces)
                output.append("<h\(level)>" + inline(text) + "</h\(level)>")
            } else if let item = listItem(trimmed) {
                flushParagraph()
                if !list.isEmpty && ordered != item.ordered { flushList() }
                ordered = item.ordered
                list.append(item.text)
            } else {
                flushList()
                paragraph.append(trimmed)
            }
        }
        if let lines = code { output.append("<pre><code>" + escape(lines.joined(separator: "\n")) + "</code></pre>") }
        flushParagraph(); flushList()
        return output.joined(separator: "\n")
    }

    /// `#` to `######` followed by a space: the level.
    private static func heading(_ line: String) -> Int? {
        let hashes = line.prefix { $0 == "#" }.count
        guard (1...6).contains(hashes), line.dropFirst(hashes).first == " " else { return nil }
        return hashes
    }

    private static func listItem(_ line: String) -> (ordered: Bool, text: String)? {
        if let first = line.first, "-*+".contains(first), line.dropFirst().first == " " {
            return (false, String(line.dropFirst(2)))
        }
        let digits = line.prefix { $0.isASCII && $0.isNumber }
        if !digits.isEmpty, digits.count <= 9, line.dropFirst(digits.count).hasPrefix(". ") {
            return (true, String(line.dropFirst(digits.count + 2)))
        }
        return nil
    }

    /// Emphasis, strong, inline code and links, over escaped text.
    static func inline(_ text: String) -> String {
        var result = ""
        var rest = Substring(text)
        while let char = rest.first {
            if char == "`", let end = rest.dropFirst().firstIndex(of: "`") {
                result += "<code>" + escape(String(rest[rest.index(after: rest.startIndex)..<end])) + "</code>"
                rest = rest[rest.index(after: end)...]
            } else if rest.hasPrefix("**"), let end = rest.dropFirst(2).range(of: "**") {
                result += "<strong>" + inline(String(rest[rest.index(rest.startIndex, offsetBy: 2)..<end.lowerBound])) + "</strong>"
                rest = rest[end.upperBound...]
            } else if char == "*" || char == "_", let end = rest.dropFirst().firstIndex(of: char), end > rest.index(after: rest.startIndex) {
                result += "<em>" + inline(String(rest[rest.index(after: rest.startIndex)..<end])) + "</em>"
                rest = rest[rest.index(after: end)...]
            } else if char == "[", let link = link(rest) {
                result += link.html
                rest = link.rest
            } else {
                result += escape(String(char))
                rest = rest.dropFirst()
            }
        }
        return result
    }

    /// `[text](url)` with an http, https or mailto URL; anything else stays text.
    private static func link(_ text: Substring) -> (html: String, rest: Substring)? {
        guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix("("),
              let end = text[close...].firstIndex(of: ")") else { return nil }
        let label = String(text[text.index(after: text.startIndex)..<close])
        let url = String(text[text.index(close, offsetBy: 2)..<end]).trimmingCharacters(in: .whitespaces)
        let lower = url.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://") || lower.hasPrefix("mailto:"),
              !url.contains(where: { $0.isWhitespace || $0 == "\"" || $0 == "<" || $0 == ">" }) else { return nil }
        return ("<a href=\"\(escape(url))\">" + inline(label) + "</a>", text[text.index(after: end)...])
    }

    static func escape(_ text: String) -> String { HTMLText.escape(text) }
}
