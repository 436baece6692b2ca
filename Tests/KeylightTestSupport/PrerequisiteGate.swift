import Foundation

/// Tests that need something outside the package (a PostgreSQL server, a browser, a decoder).
/// Locally a missing prerequisite skips that part and says what is missing; with
/// `KEYLIGHT_REQUIRE_ALL_TESTS=1` (set by CI) it fails the test instead, so nothing goes unrun unseen.
public enum PrerequisiteGate {
    public static var isRequired: Bool { ProcessInfo.processInfo.environment["KEYLIGHT_REQUIRE_ALL_TESTS"] == "1" }

    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }

    /// Throws when prerequisites are required; otherwise prints a note naming what is missing.
    public static func missing(_ what: String) throws {
        if isRequired { throw Missing(description: "prerequisite missing (KEYLIGHT_REQUIRE_ALL_TESTS=1): \(what)") }
        print("note: skipping a test that needs \(what)")
    }
}
