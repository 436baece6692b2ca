import Foundation

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

    static let bundleNames = ["Keylight_KeylightUI.bundle", "Keylight_KeylightUI.resources"]

    /// KeylightUI's resource bundle beside the app or tool, or beside the bundle holding this code
    /// (a framework, or a test bundle whose `Bundle.main` is the test runner), found without
    /// `Bundle.module` (whose accessor stops a process that lacks it).
    static let resourceBundle: Bundle? = {
        let main = Bundle.main, own = Bundle(for: BundleToken.self)
        let folders = [main.resourceURL, main.bundleURL, main.executableURL?.deletingLastPathComponent(),
                       own.resourceURL, own.bundleURL, own.bundleURL.deletingLastPathComponent()].compactMap { $0 }
        for folder in folders {
            for name in bundleNames {
                let url = folder.appendingPathComponent(name, isDirectory: true)
                if FileManager.default.fileExists(atPath: url.path), let bundle = Bundle(url: url) { return bundle }
            }
        }
        return nil
    }()
}

/// A class of this module, for `Bundle(for:)`.
private final class BundleToken {}
