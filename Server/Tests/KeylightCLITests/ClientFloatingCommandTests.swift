import Foundation
import Testing

/// `keylight client` with a floating license and an "updates until" license, against `keylight serve`.
@Suite(.serialized, .timeLimit(.minutes(6))) struct ClientFloatingCommandTests {
    @Test func aFloatingSeatIsReleasedAndRetakenAndANewerBuildRunsLimited() async throws {
        let fixture = try await ClientFixture.start()
        try await fixture.admin(.POST, "/tenants/acme/products/app/key-types",
                                #"{"id":"site","display_name":"Site","activation_limit":1,"fallback_access":false,"entitlements":["pro"],"floating":true,"heartbeat_seconds":300}"#)
        try await fixture.admin(.POST, "/tenants/acme/products/app/key-types",
                                #"{"id":"year","display_name":"Year of updates","activation_limit":2,"fallback_access":false,"entitlements":["pro"],"updates_days":365}"#)
        let floating = try await fixture.license("site")
        let yearly = try await fixture.license("year")
        func client(_ store: String, _ arguments: [String], release: String? = nil) async throws -> CLI.Result {
            try await fixture.client(store, arguments, options: release.map { ["--app-release-date", $0] } ?? [])
        }
        let json = ClientFixture.json

        let first = try json(try await client("a", ["activate", floating]))
        #expect(first["state"] as? String == "licensed" && first["floating"] as? Bool == true)
        let full = try await client("b", ["activate", floating])
        #expect(full.status == 1 && full.stderr.contains("ACTIVATION_LIMIT_REACHED"))
        // "a" quits: its seat is given back and the key kept.
        let released = try json(try await client("a", ["release-seat"]))
        #expect(released["state"] as? String == "limited" && released["instance_id"] is NSNull)
        #expect(try json(try await client("b", ["activate", floating]))["state"] as? String == "licensed")
        // "a" launches again: the seat is taken, so it runs limited with the holder named.
        let waiting = try json(try await client("a", ["status"]))
        #expect(waiting["state"] as? String == "limited" && waiting["last_error"] as? String == "ACTIVATION_LIMIT_REACHED")
        #expect(try json(try await client("b", ["release-seat"]))["state"] as? String == "limited")
        #expect(try json(try await client("a", ["refresh"]))["state"] as? String == "licensed")
        let notFloating = try await client("c", ["release-seat"])
        #expect(notFloating.status == 1 && notFloating.stderr.contains("NOT_FLOATING"))

        // Updates until: the date is printed; a build released after it runs limited, an earlier one licensed.
        let old = try json(try await client("old", ["activate", yearly], release: "2020-01-01"))
        #expect(old["state"] as? String == "licensed" && old["entitlements"] as? [String] == ["pro"])
        let until = try #require(old["updates_until"] as? Int)
        #expect(abs(until - Int(Date().timeIntervalSince1970) - 365 * 86_400) < 300)
        let future = try json(try await client("new", ["activate", yearly], release: "2100-01-01"))
        #expect(future["state"] as? String == "limited" && (future["reason"] as? String)?.contains("newer than the updates") == true)
        let bad = try await client("new", ["status"], release: "someday")
        #expect(bad.status != 0 && bad.stderr.contains("--app-release-date"))
        _ = await fixture.server.terminate()
    }
}
