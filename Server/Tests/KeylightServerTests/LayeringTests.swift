import Foundation
import Testing

/// The server's layering, read from its sources (docs/ARCHITECTURE.md): doors reach storage only
/// through a service, storage shapes no outbound event, and nothing reads the system's clock.
@Suite struct LayeringTests {
    static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/KeylightServer")

    /// Every Swift file under `folder` (relative to the server's sources) whose name matches.
    static func files(_ folder: String, named matches: (String) -> Bool = { _ in true }) throws -> [(name: String, code: [String])] {
        let root = sources.appendingPathComponent(folder)
        let enumerator = try #require(FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil))
        var found: [(String, [String])] = []
        for case let url as URL in enumerator where url.pathExtension == "swift" && matches(url.lastPathComponent) {
            let text = try String(contentsOf: url, encoding: .utf8)
            // Code only: documentation and comments may name what the code must not do.
            let code = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
            found.append((folder + "/" + url.lastPathComponent, code))
        }
        return found
    }

    static func offenders(_ files: [(name: String, code: [String])], _ pattern: String) -> [String] {
        files.flatMap { file in
            file.code.enumerated().filter { $0.element.range(of: pattern, options: .regularExpression) != nil }.map { "\(file.name):\($0.offset + 1)" }
        }
    }

    @Test func doorsReachStorageOnlyThroughAService() throws {
        let doors = try Self.files("Dashboard") { $0.hasSuffix("Controller.swift") || $0 == "DashboardRoutes.swift" || $0 == "DashboardAuthMiddleware.swift" || $0 == "ProductCharts.swift" }
            + Self.files("Portal") + Self.files("Admin") { $0.hasPrefix("AdminRoutes") || $0 == "AdminRouter.swift" }
            + Self.files("Releases") { $0 == "UpdateRoutes.swift" }
            + Self.files("SDK") { $0 == "SDKRoutes.swift" }
            + Self.files("Stripe") { $0.hasSuffix("Routes.swift") } + Self.files("Merchants") { $0.hasSuffix("Routes.swift") }
            + Self.files("AppStore") { $0 == "AppStoreNotifications.swift" } + Self.files("Observability") { $0 == "OpsRoutes.swift" }
            + Self.files("Reminders") { $0.hasSuffix("Routes.swift") }
        #expect(doors.count >= 15, "the door files were not found: \(doors.map(\.name))")
        // IdempotencyKeys is the admin router's own store, handed the database when it is built.
        let reached = Self.offenders(doors, #"\bdatabase\b"#)
        let allowed = try Self.files("Admin") { $0 == "AdminRoutes.swift" }.flatMap { file in
            file.code.enumerated().filter { $0.element.contains("IdempotencyKeys(database:") }.map { "\(file.name):\($0.offset + 1)" }
        }
        #expect(Set(reached).subtracting(allowed).isEmpty, "doors that reach the database: \(Set(reached).subtracting(allowed).sorted())")
    }

    @Test func storageShapesNoOutboundEventAndDecidesNoRefusal() throws {
        let storage = try Self.files("Storage")
        #expect(storage.count >= 30)
        #expect(Self.offenders(storage, #"WebhookEvent\("#).isEmpty, "storage builds webhook payloads: \(Self.offenders(storage, #"WebhookEvent\("#))")
        #expect(Self.offenders(storage, #"LicensingService\.|LicenseRules\."#).isEmpty, "storage calls the rules itself")
        // Refusals are the domain's: storage reports facts (an outcome, a refusal of its own type).
        let refusing = Self.offenders(storage, #"APIError\.|throw APIError"#)
        #expect(refusing.isEmpty, "storage decides an API error: \(refusing)")
        // Audit rows of license and instance changes go through ChangeLog (the catalogue's, the
        // settings' and the keys' own audit lines are not license changes).
        let direct = Self.offenders(storage, #"action: "(license|instance)\."#)
        #expect(direct.isEmpty, "license changes audited around ChangeLog: \(direct)")
    }

    @Test func nothingReadsTheSystemClock() throws {
        let everything = try Self.files(".")
        #expect(everything.count >= 100)
        #expect(Self.offenders(everything, #"\bDate\(\)"#).isEmpty, "Date() outside WallClock: \(Self.offenders(everything, #"\bDate\(\)"#))")
    }
}
