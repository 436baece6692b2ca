import Foundation
#if canImport(Combine)
import Combine
#endif

/// What every KeylightUI model shares: it runs on the main actor, and tells SwiftUI's
/// `ObservableObject` observers before any published property changes (each property's `willSet`
/// calls ``changing()``). Plain Swift otherwise, so every decision runs in the Linux tests.
@MainActor
public class KeylightUIModel {
    /// Where the text comes from (the user's language, or one chosen for tests and previews).
    public let strings: UIStrings

    init(strings: UIStrings) {
        self.strings = strings
    }

    func changing() {
        #if canImport(Combine)
        objectWillChange.send()
        #endif
    }
}

#if canImport(Combine)
extension KeylightUIModel: ObservableObject {}
#endif
