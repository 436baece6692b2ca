import Foundation

/// Tests that need something outside the package (a PostgreSQL server, a browser, a decoder).
/// Locally a missing prerequisite skips that part and says what is missing; with
/// `KEYLIGHT_REQUIRE_ALL_TESTS=1` (set by CI) it fails the test instead, so nothing goes unrun unseen.
public enum PrerequisiteGate {
    public static var isRequired: Bool { ProcessInfo.processInfo.environment["KEYLIGHT_REQUIRE_ALL_TESTS"] == "1" }

    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }

    /// Whether a gated test should run at all: when its prerequisite is present, or when CI
    /// requires every test (it then runs and fails on the missing prerequisite, by name).
    public static func enabled(_ present: Bool) -> Bool { present || isRequired }

    /// `present`, after saying what is missing when it is not: throws when prerequisites are
    /// required, else prints a note (the test then returns without running its checks).
    public static func require(_ present: Bool, _ what: String) throws -> Bool {
        if !present { try missing(what) }
        return present
    }

    /// Throws when prerequisites are required; otherwise prints a note naming what is missing.
    public static func missing(_ what: String) throws {
        if isRequired { throw Missing(description: "prerequisite missing (KEYLIGHT_REQUIRE_ALL_TESTS=1): \(what)") }
        print("note: skipping a test that needs \(what)")
    }
}
