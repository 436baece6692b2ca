import Crypto
import Foundation
import HTTPTypes
@testable import KeylightServer
import KeylightTestSupport
import SQLKit
import Testing

/// Issue 52: each release keeps a database its own binary wrote (Tests/Fixtures/upgrade/<release>:
/// an SQL dump, its master key, and what that server answered). This build opens each, migrates it
/// and serves it: every license validates with the same answer, every sealed secret opens, and the
/// insights and audit rows read back as that release showed them.
@Suite(.timeLimit(.minutes(6))) struct UpgradeFixtureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/upgrade")

    /// Every release folder holding a dump.
    static var releases: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return names.filter { FileManager.default.fileExists(atPath: root.appendingPathComponent("\($0)/keylight.sql").path) }.sorted()
    }

    struct Fixture: Sendable {
        /// expected.json, kept as bytes so the fixture can cross into the server's closures.
        var expectedJSON: Data
        var expected: [String: Any] { (try? JSONSerialization.jsonObject(with: expectedJSON)) as? [String: Any] ?? [:] }
        var masterKey: String
        var madeAt: Int64
        var databasePath: String
    }

    /// The dump loaded into a new SQLite file by Python's own sqlite3 (a script of many
    /// statements, with text that may hold semicolons and line breaks).
    static func load(_ release: String) throws -> Fixture {
        let folder = root.appendingPathComponent(release)
        let expectedJSON = try Data(contentsOf: folder.appendingPathComponent("expected.json"))
        let expected = try #require(try JSONSerialization.jsonObject(with: expectedJSON) as? [String: Any])
        let masterKey = try String(contentsOf: folder.appendingPathComponent("master-key"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let path = try temporaryDirectory("keylight-upgrade").appendingPathComponent("keylight.sqlite").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(open(sys.argv[2]).read()); c.close()",
                             path, folder.appendingPathComponent("keylight.sql").path]
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "python3 could not load \(release)'s dump")
        let madeAt = try #require((expected["made_at"] as? NSNumber)?.int64Value)
        return Fixture(expectedJSON: expectedJSON, masterKey: masterKey, madeAt: madeAt, databasePath: path)
    }

    static func harness(_ fixture: Fixture) -> Harness {
        // An hour after the fixture was made: expiries were chosen years away (or years ago).
        var harness = Harness(databasePath: fixture.databasePath, clock: TestClock(fixture.madeAt + 3_600))
        harness.configuration.masterKey = fixture.masterKey
        harness.configuration.activityFlushInterval = .seconds(3_600)
        return harness
    }

    /// The members of a validate answer an upgrade must not change (the fixture maker's own rule:
    /// signatures and the request's times differ per request; a lease's length does not).
    static func comparable(status: Int, _ body: [String: Any]) -> [String: Any] {
        guard status == 200 else {
            var kept: [String: Any] = ["code": body["code"] ?? NSNull()]
            for extra in ["activation_limit", "license_expires_at"] where body[extra] != nil { kept[extra] = body[extra] }
            return kept
        }
        let lease = body["lease"] as? [String: Any] ?? [:]
        let config = body["config"] as? [String: Any] ?? [:]
        let seconds = ((lease["expiresAt"] as? NSNumber)?.int64Value ?? 0) - ((lease["issuedAt"] as? NSNumber)?.int64Value ?? 0)
        var kept: [String: Any] = [
            "valid": body["valid"] ?? NSNull(), "license_expires_at": body["license_expires_at"] ?? NSNull(),
            "lease": ["kid": lease["kid"] ?? NSNull(), "licenseKeyHash": lease["licenseKeyHash"] ?? NSNull(), "instanceId": lease["instanceId"] ?? NSNull(),
                      "status": lease["status"] ?? NSNull(), "entitlements": lease["entitlements"] ?? NSNull(), "seconds": seconds],
            "config": ["kid": config["kid"] ?? NSNull(), "trial_duration_days": config["trial_duration_days"] ?? NSNull(), "free_tier_enabled": config["free_tier_enabled"] ?? NSNull()],
            "trial_duration_days": body["trial_duration_days"] ?? NSNull(), "free_tier_enabled": body["free_tier_enabled"] ?? NSNull(), "kid": body["kid"] ?? NSNull(),
        ]
        for extra in ["heartbeat_seconds", "over_limit"] where body[extra] != nil { kept[extra] = body[extra] }
        return kept
    }

    /// `value` in a canonical form two answers can be compared by (sorted keys).
    static func canonical(_ value: Any) -> String {
        guard JSONSerialization.isValidJSONObject([value]), let data = try? JSONSerialization.data(withJSONObject: [value], options: [.sortedKeys]) else { return "\(value)" }
        return String(decoding: data, as: UTF8.self)
    }

    /// `actual` limited to the keys `expected` has, at every level (newer releases add fields).
    static func projected(_ actual: Any?, like expected: Any) -> Any {
        if let expected = expected as? [String: Any] {
            let actual = actual as? [String: Any] ?? [:]
            return expected.reduce(into: [String: Any]()) { result, pair in result[pair.key] = projected(actual[pair.key], like: pair.value) }
        }
        if let expected = expected as? [Any], let actual = actual as? [Any], expected.count == actual.count {
            return zip(actual, expected).map { projected($0, like: $1) }
        }
        return actual ?? NSNull()
    }

    @Test(arguments: releases) func everyLicenseValidatesWithTheSameAnswer(release: String) async throws {
        let fixture = try Self.load(release)
        try #require(fixture.expected["licenses"] is [[String: Any]])
        try await Self.harness(fixture).run { client in
            let licenses = fixture.expected["licenses"] as? [[String: Any]] ?? []
            var compared = 0
            for license in licenses {
                for check in license["validate"] as? [[String: Any]] ?? [] {
                    let request = try #require(check["request"] as? [String: Any])
                    var headers = HTTPFields()
                    for (name, value) in request["headers"] as? [String: String] ?? [:] { headers[HTTPField.Name(name)!] = value }
                    headers[.contentType] = "application/json"
                    let body = try JSONSerialization.data(withJSONObject: request["body"] ?? [:])
                    let reply = try await client.request(.post, try #require(request["path"] as? String), headers: headers, body: String(decoding: body, as: UTF8.self))
                    #expect(Int(reply.status.code) == check["status"] as? Int, "\(license["name"] ?? "?"): \(reply.text)")
                    let answer = Self.comparable(status: Int(reply.status.code), reply.json)
                    #expect(Self.canonical(answer) == Self.canonical(check["answer"] ?? NSNull()), "\(license["name"] ?? "?") (\(license["license_key"] ?? "")): \(reply.text)")
                    compared += 1
                }
            }
            #expect(compared >= 40, "only \(compared) validations in the fixture")
            // The database is this build's now: every migration recorded.
            #expect(try await client.database.appliedMigrations().count == Migration.all.count)
        }
    }

    @Test(arguments: releases) func everySealedSecretOpens(release: String) async throws {
        let fixture = try Self.load(release)
        try #require(fixture.expected["sealed"] is [[String: Any]])
        let sealer = try SecretSealer.load(environmentValue: fixture.masterKey, path: "/nonexistent")
        try await Self.harness(fixture).run { client in
            let sealed = fixture.expected["sealed"] as? [[String: Any]] ?? []
            var opened = 0
            for entry in sealed {
                let table = try #require(entry["table"] as? String), column = try #require(entry["column"] as? String)
                let keys = try #require(entry["row"] as? [String: Any])
                let condition = keys.sorted { $0.key < $1.key }.map { "\(ident: $0.key) = \(bind: "\($0.value)")" as SQLQueryString }.joined(separator: " AND ")
                let row = try #require(try await client.database.sql.raw("SELECT \(ident: column) AS sealed FROM \(ident: table) WHERE \(condition)").first(), "\(table) \(keys)")
                let value = try row.decode(column: "sealed", as: String.self)
                let plaintext = try sealer.open(value, context: try #require(entry["context"] as? String))
                #expect(SHA256.hash(data: plaintext).map { String(format: "%02x", $0) }.joined() == entry["plaintext_sha256"] as? String, "\(table).\(column) \(keys)")
                opened += 1
            }
            #expect(opened == sealed.count && opened >= 13)
            // Every table the fixture filled still has its rows after the migrations.
            for (table, count) in fixture.expected["row_counts"] as? [String: Int] ?? [:] where table != "sqlite_sequence" && table != "keylight_migrations" {
                #expect(try await client.count("SELECT COUNT(*) AS n FROM \(table)") >= (count > 0 ? 1 : 0), "\(table)")
            }
        }
    }

    @Test(arguments: releases) func insightsAndAuditRowsReadBack(release: String) async throws {
        let fixture = try Self.load(release)
        let madeDay = CivilDay.format(fixture.madeAt.flooringDivided(by: 86_400))
        try await Self.harness(fixture).run { client in
            for (name, check) in fixture.expected["insights"] as? [String: [String: Any]] ?? [:] {
                let line = try #require(check["request"] as? String)
                let path = String(try #require(line.split(separator: " ").last)).replacingOccurrences(of: "/admin/v1", with: "")
                let reply = try await client.admin(.get, path)
                #expect(reply.status == .ok, "\(name): \(reply.text)")
                let old = try #require(check["answer"] as? [String: Any])
                // The funnel reads keyless_installs and its daily counts: the same rows, the same figures.
                #expect(Self.canonical(reply["funnel"] ?? NSNull()) == Self.canonical(old["funnel"] ?? NSNull()), "\(name)")
                // Days rolled up before the dump are read from insights_daily as they were stored;
                // the day of the dump is counted live (and a converted trial is one device now).
                let oldDays = (old["series"] as? [[String: Any]] ?? []).filter { ($0["day"] as? String ?? "") < madeDay }
                let newDays = (reply["series"] as? [[String: Any]] ?? []).filter { ($0["day"] as? String ?? "") < madeDay }
                #expect(!oldDays.isEmpty && Self.canonical(newDays) == Self.canonical(oldDays), "\(name)")
                let devices = reply["active_devices"] as? [[String: Any]] ?? []
                #expect(!devices.isEmpty && devices.allSatisfy { ($0["licensed"] as? Int ?? -1) + ($0["keyless"] as? Int ?? -1) == $0["devices"] as? Int }, "\(name)")
            }
            let audit = try #require(fixture.expected["audit_log"] as? [String: Any])
            let line = try #require(audit["request"] as? String)
            let reply = try await client.admin(.get, String(try #require(line.split(separator: " ").last)).replacingOccurrences(of: "/admin/v1", with: ""))
            #expect(reply.status == .ok, "\(reply.text)")
            let old = try #require((audit["answer"] as? [String: Any])?["entries"] as? [[String: Any]])
            let new = reply["entries"] as? [[String: Any]] ?? []
            #expect(old.count >= 50 && Self.canonical(Self.projected(new, like: old)) == Self.canonical(old))
        }
    }
}
