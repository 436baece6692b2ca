import Foundation
@testable import Keylight
@testable import KeylightUI
import Testing

/// Every text of the license window in English (compiled in) and in each `.lproj` table, and the
/// models speaking each language. The tables come from KeylightUI's resource bundle, which
/// `swift test` puts beside the test binary (found without `Bundle.module`).
@MainActor @Suite struct UIStringsTests {
    nonisolated static let languages = ["de", "fr", "ja"]

    static func table(_ language: String) throws -> [String: String] {
        let bundle = try #require(UIStrings.resourceBundle, "KeylightUI's resource bundle is not beside the tests")
        let path = try #require(bundle.path(forResource: language, ofType: "lproj"), "no \(language).lproj")
        let data = try Data(contentsOf: URL(fileURLWithPath: path).appendingPathComponent("KeylightUI.strings"))
        return try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: String])
    }

    static func placeholders(_ text: String) -> [String] {
        var found: [String] = []
        var index = text.startIndex
        while let range = text[index...].range(of: "%") {
            let next = text.index(after: range.lowerBound)
            if next < text.endIndex { found.append("%" + String(text[next])) }
            index = next < text.endIndex ? text.index(after: next) : text.endIndex
        }
        return found
    }

    @Test(arguments: languages)
    func everyTextIsTranslatedWithItsPlaceholders(language: String) throws {
        let table = try Self.table(language)
        #expect(Set(table.keys) == Set(UIStrings.Key.allCases.map(\.rawValue)))
        for key in UIStrings.Key.allCases {
            let text = try #require(table[key.rawValue], "\(language): \(key)")
            #expect(!text.isEmpty)
            #expect(Self.placeholders(text) == Self.placeholders(key.english), "\(language): \(key)")
            if key != .offlineRequestFileName && key.english.count > 12 { #expect(text != key.english, "\(language): \(key) is untranslated") }
        }
    }

    @Test func theEnglishTableMatchesTheCompiledText() throws {
        let english = try Self.table("en")
        for key in UIStrings.Key.allCases { #expect(english[key.rawValue] == key.english, "\(key)") }
        // Without a bundle (the static binary, a tool shipped alone) English is still there.
        let bare = UIStrings(language: "de", bundle: nil)
        #expect(bare[.activateButton] == "Activate")
    }

    @Test(arguments: ["en"] + languages)
    func theModelsSpeakEachLanguage(language: String) async throws {
        let strings = UIStrings(language: language)
        let table = language == "en" ? Dictionary(uniqueKeysWithValues: UIStrings.Key.allCases.map { ($0.rawValue, $0.english) }) : try Self.table(language)
        let manager = LicenseManager.preview(state: .trial(daysLeft: 5))
        let banner = TrialBannerModel(manager: manager, strings: strings)
        #expect(banner.text == String(format: table["trialDaysLeft"]!, locale: Locale(identifier: language), 5))
        #expect(banner.buyTitle == table["buyButton"])
        let activation = ActivationModel(manager: manager, strings: strings)
        activation.keyText = "!!"
        #expect(activation.keyHint == table["keyInvalid"])
        let summary = LicenseSummaryModel(manager: LicenseManager.preview(state: .licensed), strings: strings)
        #expect(summary.stateName == table["stateLicensed"])
        #expect(LicenseSummaryModel(manager: LicenseManager.preview(state: .expired), strings: strings).stateName == table["stateExpired"])
        let failure = LicenseFailure(.transient("offline"), strings: strings, renewURL: nil, supportEmail: nil)
        #expect(failure.title == table["offlineTitle"] && LicenseFailure.title(of: .retry, strings) == table["retryButton"])
    }

    @Test func theTrialBannerShowsOnlyWithoutALicense() {
        let english = UIStrings(language: "en", bundle: nil)
        #expect(TrialBannerModel(manager: .preview(state: .trial(daysLeft: 1)), strings: english).text == "1 day left in your trial")
        #expect(TrialBannerModel(manager: .preview(state: .trial(daysLeft: 1)), strings: english).isVisible)
        #expect(TrialBannerModel(manager: .preview(state: .expired), strings: english).text == "Your trial has ended")
        #expect(!TrialBannerModel(manager: .preview(state: .licensed), strings: english).isVisible)
    }
}
