import Foundation
import KeylightCore

/// A license key as the user types or pastes it: cleaned, and checked as it grows.
public struct KeyEntry: Hashable, Sendable {
    public enum Check: Hashable, Sendable {
        case empty
        /// Could become a key with more typing.
        case incomplete
        /// A key of another product (its first part is not this product's prefix).
        case wrongProduct
        /// Characters no key has, or longer than any key.
        case invalid
        /// A key of this product's format: ready to activate.
        case ready
    }

    /// The text as cleaned: no spaces, line breaks or tabs, upper case, dashes as hyphens.
    public let text: String
    public let check: Check

    /// `prefix`: the product's key prefix ("" accepts any).
    public init(_ typed: String, prefix: String) {
        text = Self.clean(typed)
        check = Self.check(text, prefix: prefix)
    }

    /// What a paste or keystroke leaves: whitespace of every kind dropped, letters upper-cased,
    /// typographic dashes read as hyphens (a key copied from a rich-text email).
    static func clean(_ typed: String) -> String {
        var out = ""
        for scalar in typed.unicodeScalars {
            if scalar.properties.isWhitespace || scalar.properties.generalCategory == .format { continue }
            switch scalar {
            case "\u{2010}", "\u{2011}", "\u{2012}", "\u{2013}", "\u{2014}", "\u{2212}": out.append("-")
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out.uppercased()
    }

    static func check(_ text: String, prefix: String) -> Check {
        guard !text.isEmpty else { return .empty }
        let allowed = text.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" }
        guard allowed, text.utf8.count <= 64 else { return .invalid }
        if !prefix.isEmpty {
            // The first part, once typed out, must be the product's prefix; until then it must lead to it.
            if let dash = text.firstIndex(of: "-") {
                if text[..<dash] != prefix { return .wrongProduct }
            } else if !prefix.hasPrefix(text) && !text.hasPrefix(prefix) {
                return .wrongProduct
            }
        }
        if let key = try? LicenseKey(text), prefix.isEmpty || key.hasProductPrefix(prefix) { return .ready }
        return .incomplete
    }

    /// How a key of this product looks, for "keep typing" hints.
    public static func example(prefix: String) -> String {
        "\(prefix.isEmpty ? "ACME" : prefix)-XXXX-XXXX-XXXX-XXXX"
    }
}
