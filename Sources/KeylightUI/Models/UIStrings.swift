import Foundation
import Keylight

/// Every word the license window shows, in English (compiled in, so Linux and a binary shipped
/// alone need no bundle) and, where the app ships KeylightUI's resource bundle, German, French
/// and Japanese from its `.lproj` tables. Models ask for text here; views show what models say.
public struct UIStrings: Sendable {
    /// The language whose table is read (nil: the system's preferred localization of the bundle).
    public let language: String?
    private let table: Bundle?

    /// The text in `language` (for example "de"), or in the user's preferred language.
    public init(language: String? = nil) {
        self.init(language: language, bundle: UIStrings.resourceBundle)
    }

    init(language: String?, bundle: Bundle?) {
        self.language = language
        if let language, let bundle, let path = bundle.path(forResource: language, ofType: "lproj") {
            table = Bundle(path: path)
        } else {
            table = language == nil || language == "en" ? bundle : nil
        }
    }

    public subscript(_ key: Key) -> String {
        guard let table else { return key.english }
        return table.localizedString(forKey: key.rawValue, value: key.english, table: "KeylightUI")
    }

    /// A text with `%@`/`%d` placeholders, filled in.
    public func format(_ key: Key, _ arguments: any CVarArg...) -> String {
        String(format: self[key], locale: language.map { Locale(identifier: $0) }, arguments: arguments)
    }

    /// KeylightUI's resource bundle, found as the SDK finds its own, without `Bundle.module` (whose
    /// accessor stops a process that lacks it).
    static let resourceBundle: Bundle? = SDKStrings.findBundle(target: "KeylightUI", beside: BundleToken.self)
}

/// A class of this module, for `Bundle(for:)`.
private final class BundleToken {}
