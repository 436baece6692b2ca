import Foundation

extension String {
    /// The text as a person may be shown it: control and format characters dropped, white space
    /// trimmed, at most `limit` characters; nil when nothing is left. For words that come from
    /// outside (the server's unsigned details, the system's device names).
    func displayText(limit: Int) -> String? {
        let printable = String(unicodeScalars.filter { scalar in
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator: false
            default: true
            }
        }.map(Character.init)).trimmingCharacters(in: .whitespacesAndNewlines)
        return printable.isEmpty ? nil : String(printable.prefix(limit))
    }
}
