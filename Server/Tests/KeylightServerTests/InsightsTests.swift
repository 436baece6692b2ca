import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import KeylightServerTestSupport
import SQLKit
import Testing

/// Issue 37: the telemetry the hosted clients send, recorded on the instance or install and per
/// device and day, cut at the caps of protocol 6.8; keyless check-ins stored once per state
/// change and at most every 6 hours; the funnel, the devices per dimension, the series, quiet
/// licenses, the roll-up that outlives the pruned rows, and the query's refusals.
@Suite(.timeLimit(.minutes(6))) struct InsightsTests {
    static func json(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    /// The stored telemetry of one row, by column.
    static func telemetry(_ client: Client, table: String, id: String, idColumn: String = "id") async throws -> [String: String?] {
        let row = try #require(try await client.database.sql.raw("SELECT * FROM \(ident: table) WHERE \(ident: idColumn) = \(bind: id)").first())
        var values: [String: String?] = [:]
        for dimension in InsightDimension.allCases {
            values[dimension.column] = try row.decodeNil(column: dimension.column) ? nil : try row.decode(column: dimension.column, as: String.self)
        }
        return values
    }

    static func day(_ client: Client) -> Int64 { client.clock.unixSeconds.flooringDivided(by: 86_400) }

    /// Writes what the activity buffer holds now, as its periodic flush would.
    static func flush(_ client: Client) async throws {
        let batch = client.server.admin.licensing.activity.drain()
        try await client.database.touchInstances(batch.times, usage: batch.usage, keyless: batch.keyless, devices: batch.devices, instanceTelemetry: batch.instanceTelemetry)
    }

    /// Each hosted client's bodies as its public source builds them (field names, JSON types and
    /// order): C# 0.5.0, C++ 0.1.2 and 0.2.x, JavaScript 0.2.0, Rust 0.3.6 (alphabetical keys),
    /// and the Swift binary SDK (capitalised platform, `device_class`).
    @Test func theHostedClientsTelemetryIsRecordedOnInstancesAndInstalls() async throws {
        try await Harness().run { client in
            let seed = try await client.seed(limit: 10)
            let hash = "8e8871112f28cabda180ada131d0b4f4f07c72fb47c5d884edbe32812885b22a"
            struct Case { var name: String; var contentType: String; var activate: String; var validate: (String) -> String; var expected: [String: String?] }
            let key = seed.licenseKey
            let cases: [Case] = [
                Case(name: "csharp", contentType: "application/json; charset=utf-8",
                     activate: #"{"license_key":"\#(key)","instance_name":"DESKTOP-7Q","app_version":"2.1.0","sdk_version":"0.5.0","platform":"windows","sdk":"csharp","cpu_cores":"5-8","memory":"16-32GB","os_version":"10.0.22631","arch":"x86_64","sdk_trial_duration_days":14,"machine_hash":"c#\#(hash)"}"#,
                     validate: { #"{"license_key":"\#(key)","instance_id":"\#($0)","app_version":"2.1.1","sdk_version":"0.5.0","platform":"windows","sdk":"csharp","cpu_cores":"5-8","memory":"16-32GB","os_version":"10.0.22631","arch":"x86_64","sdk_trial_duration_days":14,"machine_hash":"c#\#(hash)"}"# },
                     expected: ["app_version": "2.1.1", "sdk_version": "0.5.0", "sdk": "csharp", "platform": "windows", "os_version": "10.0.22631", "arch": "x86_64", "cpu_cores": "5-8", "memory": "16-32GB"]),
                Case(name: "cpp 0.1.2", contentType: "application/json",
                     activate: #"{"license_key":"\#(key)","instance_name":"device","sdk_version":"0.1.2","platform":"macos","app_version":"3.0.1"}"#,
                     validate: { #"{"license_key":"\#(key)","instance_id":"\#($0)","sdk_version":"0.1.2","platform":"macos","app_version":"3.0.1"}"# },
                     expected: ["app_version": "3.0.1", "sdk_version": "0.1.2", "sdk": nil, "platform": "macos", "os_version": nil, "arch": nil, "cpu_cores": nil, "memory": nil]),
                Case(name: "js", contentType: "application/json",
                     activate: #"{"license_key":"\#(key)","instance_name":"build-box","machine_hash":"js\#(hash)","sdk_trial_duration_days":14,"sdk_version":"0.2.0","platform":"linux","sdk":"js","app_version":"1.0.0","arch":"x86_64","os_version":"6.8.0","cpu_cores":"5-8","memory":"8-16GB"}"#,
                     validate: { #"{"license_key":"\#(key)","instance_id":"\#($0)","machine_hash":"js\#(hash)","sdk_trial_duration_days":14,"sdk_version":"0.2.0","platform":"linux","sdk":"js","app_version":"1.0.0","arch":"x86_64","os_version":"6.8.0","cpu_cores":"5-8","memory":"8-16GB"}"# },
                     expected: ["app_version": "1.0.0", "sdk_version": "0.2.0", "sdk": "js", "platform": "linux", "os_version": "6.8.0", "arch": "x86_64", "cpu_cores": "5-8", "memory": "8-16GB"]),
                Case(name: "rust", contentType: "application/json",
                     activate: #"{"app_version":"1.2.0","arch":"arm64","cpu_cores":"9-16","instance_name":"mac.local","license_key":"\#(key)","machine_hash":"rs\#(hash)","memory":"16-32GB","os_version":"15.5","platform":"macos","sdk":"rust","sdk_trial_duration_days":14,"sdk_version":"0.3.6"}"#,
                     validate: { #"{"app_version":"1.2.0","arch":"arm64","cpu_cores":"9-16","instance_id":"\#($0)","license_key":"\#(key)","machine_hash":"rs\#(hash)","memory":"16-32GB","os_version":"15.5","platform":"macos","sdk":"rust","sdk_trial_duration_days":14,"sdk_version":"0.3.6"}"# },
                     expected: ["app_version": "1.2.0", "sdk_version": "0.3.6", "sdk": "rust", "platform": "macos", "os_version": "15.5", "arch": "arm64", "cpu_cores": "9-16", "memory": "16-32GB"]),
                Case(name: "swift", contentType: "application/json",
                     activate: #"{"license_key":"\#(key)","instance_name":"iPad","machine_hash":"sw\#(hash)","sdk_version":"0.12.1","sdk":"swift","platform":"iOS","app_version":"4.2","os_version":"18.1","arch":"arm64","cpu_cores":"5-8","memory":"4-8GB","device_class":"tablet","sdk_trial_duration_days":0}"#,
                     validate: { #"{"license_key":"\#(key)","instance_id":"\#($0)","machine_hash":"sw\#(hash)","sdk_version":"0.12.1","sdk":"swift","platform":"iOS","app_version":"4.2","os_version":"18.1","arch":"arm64","cpu_cores":"5-8","memory":"4-8GB","device_class":"tablet"}"# },
                     expected: ["app_version": "4.2", "sdk_version": "0.12.1", "sdk": "swift", "platform": "iOS", "os_version": "18.1", "arch": "arm64", "cpu_cores": "5-8", "memory": "4-8GB"]),
            ]
            for item in cases {
                var headers: HTTPFields = [.contentType: item.contentType, .init("X-Keylight-SDK-Key")!: seed.sdkKey]
                headers[.init("X-Keylight-Request-Id")!] = "3f2a9c1d"
                let activated = try await client.request(.post, "/acme/app/activate", headers: headers, body: item.activate)
                #expect(activated.status == .ok, "\(item.name): \(activated.text)")
                let instance = try #require(activated["instance_id"] as? String)
                let validated = try await client.request(.post, "/acme/app/validate", headers: headers, body: item.validate(instance))
                #expect(validated.status == .ok && validated["valid"] as? Bool == true, "\(item.name): \(validated.text)")
                #expect(try await eventually { try await Self.telemetry(client, table: "instances", id: instance) == item.expected }, "\(item.name)")
                #expect(try await eventually {
                    try await client.count("SELECT COUNT(*) AS n FROM device_days WHERE kind = 'licensed' AND device_id = '\(instance)' AND app_version \(item.expected["app_version"]!.map { "= '\($0)'" } ?? "IS NULL")") == 1
                }, "\(item.name)")
            }
            // The keyless beacons of C#, C++ 0.2.x and a browser's JavaScript.
            let beacons: [(String, [String: String?])] = [
                (#"{"instance_id":"6f1c0e2a-4b7d-4c1e-9a0b-1c2d3e4f5a6b","state":"trial","machine_hash":"\#(hash)","app_version":"2.1.0","sdk_version":"0.5.0","platform":"windows","sdk":"csharp","cpu_cores":"5-8","memory":"16-32GB","os_version":"10.0.22631","arch":"x86_64"}"#,
                 ["app_version": "2.1.0", "sdk_version": "0.5.0", "sdk": "csharp", "platform": "windows", "os_version": "10.0.22631", "arch": "x86_64", "cpu_cores": "5-8", "memory": "16-32GB"]),
                (#"{"instance_id":"7a1c0e2a-4b7d-4c1e-9a0b-1c2d3e4f5a6b","state":"free_tier","machine_hash":"\#(hash)","sdk_version":"0.2.1","platform":"linux","sdk":"cpp","cpu_cores":"9-16","memory":"32-64GB","os_version":"6.8.0","arch":"x86_64"}"#,
                 ["app_version": nil, "sdk_version": "0.2.1", "sdk": "cpp", "platform": "linux", "os_version": "6.8.0", "arch": "x86_64", "cpu_cores": "9-16", "memory": "32-64GB"]),
                (#"{"instance_id":"8b1c0e2a-4b7d-4c1e-9a0b-1c2d3e4f5a6b","state":"trial","sdk_version":"0.2.0","platform":"web","sdk":"js"}"#,
                 ["app_version": nil, "sdk_version": "0.2.0", "sdk": "js", "platform": "web", "os_version": nil, "arch": nil, "cpu_cores": nil, "memory": nil]),
            ]
            for (body, expected) in beacons {
                let reply = try await client.sdkRaw("keyless", body: body, seed: seed)
                #expect(reply.status == .ok && reply["received"] as? Bool == true)
                let id = try #require((try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["instance_id"] as? String)
                #expect(try await eventually { try await client.count("SELECT COUNT(*) AS n FROM keyless_installs WHERE instance_id = '\(id)'") == 1 })
                #expect(try await Self.telemetry(client, table: "keyless_installs", id: id, idColumn: "instance_id") == expected)
            }
        }
    }

    /// Protocol 6.8's caps: cut at a whole UTF-8 character, never refused; control characters
    /// dropped; numbers read as text; an object or array dropped; `sdk_trial_duration_days` of
    /// any type ignored.
    @Test func telemetryIsCutAtItsCapsAndNeverRefused() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let longVersion = String(repeating: "9.", count: 31) + "\u{00E9}x"  // 62 bytes, then é (2 bytes) ends at 64, then x
            #expect(longVersion.utf8.count == 65)
            let body: [String: Any] = [
                "license_key": seed.licenseKey, "instance_name": "Mac", "app_version": longVersion,
                "sdk_version": String(repeating: "s", count: 100), "platform": "mac\u{0007}OS " + String(repeating: "p", count: 40),
                "sdk": ["nested": true], "os_version": 15, "arch": String(repeating: "a", count: 17), "cpu_cores": 8, "memory": "64GB+",
                "sdk_trial_duration_days": "fourteen",
            ]
            let activated = try await client.sdk("activate", body, seed: seed)
            #expect(activated.status == .ok, "\(activated.text)")
            let instance = try #require(activated["instance_id"] as? String)
            let expected: [String: String?] = [
                "app_version": String(repeating: "9.", count: 31) + "\u{00E9}", "sdk_version": String(repeating: "s", count: 64),
                "platform": Field.cut("macOS " + String(repeating: "p", count: 40), maxBytes: 32), "sdk": nil, "os_version": "15",
                "arch": String(repeating: "a", count: 16), "cpu_cores": "8", "memory": "64GB+",
            ]
            #expect(try await eventually { try await Self.telemetry(client, table: "instances", id: instance) == expected })
            // Validate with the same over-long labels: 200, the caps again.
            let validated = try await client.sdk("validate", ["license_key": seed.licenseKey, "instance_id": instance, "app_version": String(repeating: "é", count: 200), "platform": [1, 2]], seed: seed)
            #expect(validated.status == .ok, "\(validated.text)")
            #expect(try await eventually { try await Self.telemetry(client, table: "instances", id: instance)["app_version"] == String(repeating: "é", count: 32) })
            // A keyless beacon with a label of only control characters stores no value for it.
            let keyless = try await client.sdk("keyless", ["instance_id": "k-controls", "state": "trial", "app_version": "\u{0001}\u{0002}", "arch": 64.5], seed: seed)
            #expect(keyless.status == .ok)
            #expect(try await eventually { try await client.count("SELECT COUNT(*) AS n FROM keyless_installs WHERE instance_id = 'k-controls'") == 1 })
            let stored = try await Self.telemetry(client, table: "keyless_installs", id: "k-controls", idColumn: "instance_id")
            #expect(stored["app_version"] == .some(nil) && stored["arch"] == "64.5")
        }
    }

    /// A known install is stored again only on a state change or 6 hours after its last store;
    /// every beacon is answered 200.
    @Test func keylessCheckInsAreStoredOncePerStateChangeAndEverySixHours() async throws {
        // Flushed by the test alone, after each beacon: what was not stored is known not to be.
        var harness = Harness()
        harness.configuration.activityFlushInterval = .seconds(3_600)
        try await harness.run { client in
            let seed = try await client.seed()
            let start = client.clock.unixSeconds
            func beacon(_ state: String, _ version: String) async throws {
                let reply = try await client.sdk("keyless", ["instance_id": "install-6h", "state": state, "app_version": version], seed: seed)
                #expect(reply.status == .ok && reply["received"] as? Bool == true)
                try await Self.flush(client)
            }
            func stored() async throws -> (state: String, lastSeen: Int64, version: String?) {
                let row = try #require(try await client.database.sql.raw("SELECT state, last_seen_at, app_version FROM keyless_installs WHERE instance_id = 'install-6h'").first())
                return (try row.decode(column: "state", as: String.self), try row.decode(column: "last_seen_at", as: Int64.self), try row.decode(column: "app_version", as: String?.self))
            }
            try await beacon("trial", "1.0")
            #expect(try await client.count("SELECT COUNT(*) AS n FROM keyless_installs WHERE instance_id = 'install-6h'") == 1)
            client.clock.advance(by: 3_600)
            try await beacon("trial", "1.1")  // 1 h later, same state: not stored
            #expect(try await stored() == ("trial", start, "1.0"))
            client.clock.advance(by: 3_600)
            try await beacon("expired", "1.1")  // a state change: stored at once
            #expect(try await stored() == ("expired", start + 7_200, "1.1"))
            client.clock.advance(by: 6 * 3_600 - 1)
            try await beacon("expired", "1.2")  // 6 h less a second after the last store: not stored
            #expect(try await stored() == ("expired", start + 7_200, "1.1"))
            client.clock.advance(by: 1)
            try await beacon("expired", "1.2")  // 6 h after: stored
            #expect(try await stored() == ("expired", start + 7_200 + 6 * 3_600, "1.2"))
            // One install in the funnel, one trial: the state changes did not count it twice.
            #expect(try await client.count("SELECT CAST(SUM(keyless_installs) AS BIGINT) AS n FROM insights_funnel_daily") == 1)
            #expect(try await client.count("SELECT CAST(SUM(trials) AS BIGINT) AS n FROM insights_funnel_daily") == 1)
        }
    }

    /// Check-ins that reach the database out of order, and a conversion written before the
    /// install's own check-in: each install once, in the cohort of its earliest sighting, its
    /// trial once (`expired` is a trial that ran out), and its day counted once a day whatever
    /// the 6-hour rule keeps out of the install's row.
    @Test func lateAndEarlySightingsCountEachInstallOnceInItsOwnCohort() async throws {
        var harness = Harness()
        harness.configuration.activityFlushInterval = .seconds(3_600)
        try await harness.run { client in
            let seed = try await client.seed()
            // To 23:00 UTC of a day, so the next check-ins fall on the next day.
            client.clock.advance(by: 86_400 - client.clock.unixSeconds % 86_400 - 3_600)
            let day0 = Self.day(client)
            func beacon(_ id: String, _ state: String) async throws {
                #expect(try await client.sdk("keyless", ["instance_id": id, "state": state, "app_version": "1.0"], seed: seed).status == .ok)
            }
            func funnel(_ day: Int64) async throws -> FunnelFigures {
                try await client.database.funnel(tenantId: "acme", productId: "app", fromDay: day, toDay: day, now: client.clock.unixSeconds)
            }
            // A trial check-in still in the buffer when the app converts the next morning.
            try await beacon("early", "trial")
            client.clock.advance(by: 2 * 3_600)
            let activated = try await client.sdk("activate", ["license_key": seed.licenseKey, "instance_name": "Mac", "free_tier_instance_id": "early"], seed: seed)
            #expect(activated.status == .ok)
            #expect(try await funnel(day0 + 1).keylessInstalls == 1)  // written by the conversion, for now on day 1
            try await Self.flush(client)
            let moved = try await funnel(day0)
            #expect(moved.keylessInstalls == 1 && moved.trials == 1 && moved.secondsToConvert == [2 * 3_600], "\(moved)")
            #expect(try await funnel(day0 + 1) == FunnelFigures())

            // Another process wrote a later check-in first; the earlier one, flushed after, moves the install back.
            let late = KeylessInstall(tenantId: "acme", productId: "app", instanceId: "late")
            try await client.database.touchInstances([:], keyless: [late: KeylessSighting(state: "free_tier", machineHash: nil, at: client.clock.unixSeconds)])
            try await client.database.touchInstances([:], keyless: [late: KeylessSighting(state: "expired", machineHash: nil, at: client.clock.unixSeconds - 5 * 3_600)])
            let back = try await funnel(day0)
            #expect(back.keylessInstalls == 2 && back.trials == 2, "\(back)")
            #expect(try await funnel(day0 + 1).keylessInstalls == 0)

            // 21:00, then 02:00 the next day: the install's row is not written again (under 6 hours), its day is counted.
            client.clock.advance(by: 20 * 3_600)  // day0 + 1, 21:00
            try await beacon("nightly", "free_tier")
            try await Self.flush(client)
            client.clock.advance(by: 5 * 3_600)  // day0 + 2, 02:00
            try await beacon("nightly", "free_tier")
            try await Self.flush(client)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM device_days WHERE device_id = 'nightly'") == 2)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM keyless_installs WHERE instance_id = 'nightly' AND last_seen_at = \(client.clock.unixSeconds - 5 * 3_600)") == 1)
            #expect(try await client.count("SELECT CAST(SUM(keyless_installs) AS BIGINT) AS n FROM insights_funnel_daily") == 3)
        }
    }

    /// Telemetry is the app's to say, and anyone with the public SDK key can: on the dashboard it
    /// is text, never markup, in the table, the chart's labels and its description.
    @Test func hostileLabelsAreTextOnTheInsightsPage() async throws {
        try await Harness().run { client in
            let (browser, seed) = try await DashboardTests.signedIn(client)
            let hostile = #""><a href=//evil.example>Update</a><svg onload=alert(1)>"#
            #expect(try await client.sdk("keyless", ["instance_id": "hostile", "state": "trial", "app_version": hostile, "platform": "<script>x</script>"], seed: seed).status == .ok)
            #expect(try await eventually { try await client.count("SELECT COUNT(*) AS n FROM keyless_installs WHERE instance_id = 'hostile'") == 1 })
            let page = try await browser.get("/dashboard/t/acme/p/app/insights")
            #expect(page.status == .ok)
            #expect(!page.text.contains("<a href=//evil") && !page.text.contains("<svg onload") && !page.text.contains("<script>x"))
            #expect(page.text.contains("&lt;a href=//evil.example&gt;Update&lt;/a&gt;"))
            let byPlatform = try await browser.get("/dashboard/t/acme/p/app/insights?by=platform")
            #expect(!byPlatform.text.contains("<script>x") && byPlatform.text.contains("&lt;script&gt;x&lt;/script&gt;"))
            // Repeated or malformed parameters are refused there as in the API.
            #expect(try await client.admin(.get, "/tenants/acme/products/app/insights?by=arch&by=sdk").status == .badRequest)
            #expect(try await client.admin(.get, "/tenants/acme/products/app/insights?window=%2B7").status == .badRequest)
        }
    }

    /// A seeded history on every database: installs over three days, trials, conversions (one
    /// reported twice, one by an install never seen before), one converted device that stayed
    /// and one that went quiet; the funnel, the devices by two dimensions, the series from the
    /// roll-up, quiet licenses, and the prune that keeps the roll-ups.
    @Test(arguments: StorageBackend.available) func theFunnelDevicesSeriesAndPruneOnASeededHistory(backend: StorageBackend) async throws {
        var harness = try await Harness.on(backend)
        harness.configuration.insightsRetentionDays = 31
        // Flushed by the test alone: each stage is written before it is looked at.
        harness.configuration.activityFlushInterval = .seconds(3_600)
        try await harness.run { client in
            let seed = try await client.seed(limit: 5)
            let day0 = Self.day(client)
            let start = client.clock.unixSeconds
            func keyless(_ id: String, _ state: String, _ version: String) async throws {
                #expect(try await client.sdk("keyless", ["instance_id": id, "state": state, "app_version": version, "platform": "macOS"], seed: seed).status == .ok)
            }
            // Day 0: three installs (two trials), day 1: two more (one trial).
            try await keyless("k1", "trial", "1.0")
            try await keyless("k2", "trial", "1.0")
            try await keyless("k3", "free_tier", "1.0")
            try await Self.flush(client)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM keyless_installs") == 3)
            client.clock.advance(by: 86_400)
            try await keyless("k4", "trial", "2.0")
            try await keyless("k5", "free_tier", "2.0")
            // k3 starts a trial later: it counts in its own cohort (day 0).
            try await keyless("k3", "trial", "1.0")
            try await Self.flush(client)
            #expect(try await client.count("SELECT CAST(SUM(trials) AS BIGINT) AS n FROM insights_funnel_daily") == 4)
            // Conversions: k1 on day 1 (1 day after), reported twice by two activations; k4 two days later.
            func activate(_ key: String, machine: String, install: String?, version: String) async throws -> String {
                var body: [String: Any] = ["license_key": key, "instance_name": "Mac", "machine_hash": machine, "app_version": version, "os_version": "15.1", "platform": "macOS"]
                if let install { body["free_tier_instance_id"] = install }
                let reply = try await client.sdk("activate", body, seed: seed)
                #expect(reply.status == .ok, "\(reply.text)")
                return try #require(reply["instance_id"] as? String)
            }
            let converted = try await activate(seed.licenseKey, machine: "m1", install: "k1", version: "2.0")
            client.clock.advance(by: 3_600)
            let other = try await client.mint(seed)
            _ = try await activate(other.key, machine: "m2", install: "k1", version: "2.0")  // reported again: counted once
            client.clock.advance(by: 2 * 86_400)
            let third = try await client.mint(seed)
            let quietInstance = try await activate(third.key, machine: "m3", install: "k4", version: "2.0")
            // An activation naming an install no beacon ever stored joins the cohort of its day.
            _ = try await activate(try await client.mint(seed).key, machine: "m4", install: "k-unseen", version: "2.1")
            try await Self.flush(client)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM keyless_installs WHERE converted_at IS NOT NULL") == 3)
            // 31 days on: the first conversion's device still validates, k4's went quiet.
            for _ in 0..<31 {
                client.clock.advance(by: 86_400)
                #expect(try await client.sdk("validate", ["license_key": seed.licenseKey, "instance_id": converted, "app_version": "2.1", "os_version": "15.2", "platform": "macOS"], seed: seed).status == .ok)
            }
            try await Self.flush(client)
            let today = Self.day(client)

            // The cohort of days 0-1: 5 installs, 4 trials, 2 conversions (k1 after 1 day, k4 after 2 days).
            let from = CivilDay.format(day0), to = CivilDay.format(day0 + 1)
            let report = try await client.admin(.get, "/tenants/acme/products/app/insights?from=\(from)&to=\(to)&by=app_version")
            #expect(report.status == .ok, "\(report.text)")
            let funnel = try #require(report["funnel"] as? [String: Any])
            #expect(funnel["keyless_installs"] as? Int == 5 && funnel["trials"] as? Int == 4 && funnel["conversions"] as? Int == 2, "\(funnel)")
            #expect(funnel["conversion_rate"] as? Double == 0.4)
            // k1: first seen at start, converted 1 day later; k4: first seen day 1 at `start + 86_400`, converted at start + 3 d + 1 h.
            let k1Days = 1.0, k4Days = Double(2 * 86_400 + 3_600) / 86_400
            #expect(funnel["median_days_to_convert"] as? Double == ((k1Days + k4Days) / 2 * 10).rounded() / 10)
            #expect(funnel["converted_at_least_30_days_ago"] as? Int == 2 && funnel["still_active_after_30_days"] as? Int == 1, "\(funnel)")
            // Day 4's cohort is the install no beacon stored: 1 install, 1 conversion.
            let later = try await client.admin(.get, "/tenants/acme/products/app/insights?from=\(CivilDay.format(day0 + 2))&to=\(CivilDay.format(day0 + 3))")
            let laterFunnel = try #require(later["funnel"] as? [String: Any])
            #expect(laterFunnel["keyless_installs"] as? Int == 1 && laterFunnel["conversions"] as? Int == 1 && laterFunnel["trials"] as? Int == 0, "\(laterFunnel)")
            #expect(laterFunnel["conversion_rate"] as? Double == 1.0)

            // Devices seen in the last 30 days by app version: only the converted instance (2.1).
            let recent = try await client.admin(.get, "/tenants/acme/products/app/insights?by=app_version")
            let recentRows = try #require(recent["active_devices"] as? [[String: Any]])
            #expect(recentRows.count == 1 && recentRows.first?["value"] as? String == "2.1" && recentRows.first?["devices"] as? Int == 1 && recentRows.first?["licensed"] as? Int == 1, "\(recentRows)")
            #expect(recent["quiet_licenses"] as? Int == 3, "\(recent.text)")  // the other three licenses' devices were last seen a month ago
            let quietIds = Set(((recent["quiet_license_list"] as? [[String: Any]]) ?? []).compactMap { $0["license_id"] as? String })
            #expect(quietIds.contains(third.id) && !quietIds.contains(seed.licenseId))
            _ = quietInstance
            // Over the first days, by app version (last values in range; k1 and k4 converted, so they are
            // the licensed devices they became): keyless 1.0 ×2 (k2, k3), 2.0 ×1 (k5), licensed 2.0 ×3, 2.1 ×1.
            let early = try await client.admin(.get, "/tenants/acme/products/app/insights?by=app_version&from=\(CivilDay.format(day0))&to=\(CivilDay.format(day0 + 3))&window=1")
            let earlyRows = try #require(early["active_devices"] as? [[String: Any]])
            let byValue = Dictionary(uniqueKeysWithValues: earlyRows.map { ($0["value"] as? String ?? "-", ($0["licensed"] as? Int ?? -1, $0["keyless"] as? Int ?? -1)) })
            #expect(byValue["1.0"]! == (0, 2) && byValue["2.0"]! == (3, 1) && byValue["2.1"]! == (1, 0), "\(earlyRows)")
            // The series on day 0, window 1: three keyless devices on 1.0.
            let series = try #require(early["series"] as? [[String: Any]])
            #expect(series.count == 4 && series.first?["day"] as? String == CivilDay.format(day0))
            let dayZero = try #require(series.first?["devices"] as? [[String: Any]])
            #expect(dayZero.count == 1 && dayZero.first?["value"] as? String == "1.0" && dayZero.first?["devices"] as? Int == 3, "\(dayZero)")
            // The CSV has the same rows as active_devices.
            let csv = try await client.request(.get, "/admin/v1/tenants/acme/products/app/insights.csv?by=app_version&from=\(CivilDay.format(day0))&to=\(CivilDay.format(day0 + 3))", headers: [.authorization: "Bearer \(Harness.adminToken)"])
            #expect(csv.status == .ok && csv.headers[.contentType]?.hasPrefix("text/csv") == true)
            let lines = csv.text.split(separator: "\r\n").map(String.init)
            #expect(lines.first == "app_version,devices,licensed,keyless" && lines.count == earlyRows.count + 1 && lines.contains("2.0,4,3,1"), "\(csv.text)")
            // By OS version over the last 30 days.
            let os = try await client.admin(.get, "/tenants/acme/products/app/insights?by=os_version")
            #expect((os["active_devices"] as? [[String: Any]])?.first?["value"] as? String == "15.2")

            // Everything rolled up through yesterday; then the per-device days past retention go,
            // and the early series is still answered from the roll-up.
            #expect(try await client.database.rolledThrough(tenantId: "acme", productId: "app") == today - 1)
            let service = client.server.admin.insights
            await service.rollUpAndPrune(logger: Harness.logger)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM device_days WHERE day < \(today - 30)") == 0)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM device_days") > 0)
            let afterPrune = try await client.admin(.get, "/tenants/acme/products/app/insights?by=app_version&from=\(CivilDay.format(day0))&to=\(CivilDay.format(day0 + 3))&window=1")
            let prunedDayZero = try #require(((afterPrune["series"] as? [[String: Any]])?.first?["devices"]) as? [[String: Any]])
            #expect(prunedDayZero.first?["value"] as? String == "1.0" && prunedDayZero.first?["devices"] as? Int == 3)
            #expect(afterPrune["retained_from"] as? String == CivilDay.format(today - 30))
            // The funnel of the pruned days is unchanged.
            let prunedFunnel = try #require((try await client.admin(.get, "/tenants/acme/products/app/insights?from=\(from)&to=\(to)"))["funnel"] as? [String: Any])
            #expect(prunedFunnel["keyless_installs"] as? Int == 5 && prunedFunnel["conversions"] as? Int == 2)
            _ = start
        }
    }

    /// The query string's refusals: each a 400 that says what is wrong, nothing changed.
    @Test func badInsightQueriesAreRefusedByName() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            let base = "/tenants/acme/products/app/insights"
            let unknown = try await client.admin(.get, base + "?by=app_version&form=2026-01-01")
            #expect(unknown.status == .badRequest && unknown.code == "UNKNOWN_FIELD" && unknown["field"] as? String == "form")
            for (query, words) in [
                ("by=ip_address", "by must be one of"), ("from=2026-02-30", "from must be a date"), ("to=yesterday", "to must be a date"),
                ("from=2026-03-02&to=2026-03-01", "from must not be after to"), ("from=2024-01-01&to=2026-01-01", "at most 366 days"),
                ("window=2", "window must be 1, 7 or 30"),
            ] {
                let reply = try await client.admin(.get, base + "?" + query)
                #expect(reply.status == .badRequest && reply.code == "INVALID_REQUEST" && (reply["error"] as? String ?? "").contains(words), "\(query): \(reply.text)")
            }
            #expect(try await client.admin(.get, "/tenants/acme/products/nope/insights").status == .notFound)
            #expect(try await client.admin(.get, base, token: nil).status == .unauthorized)
            let csv = try await client.request(.get, "/admin/v1" + base + ".csv?table=secrets", headers: [.authorization: "Bearer \(Harness.adminToken)"])
            #expect(csv.status == .badRequest)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM insights_daily") == 0)
        }
    }

    /// Migration 0016 on a database with keyless installs recorded before it: each joins its
    /// cohort, a trial by its state, a conversion dated by the activation that last touched it.
    @Test(arguments: StorageBackend.available) func installsRecordedBeforeTheUpgradeJoinTheFunnel(backend: StorageBackend) async throws {
        let before = Array(Migration.all.prefix { $0.name != Migration.insights.name })
        let db = try await backend.open(migrations: before)
        let day: Int64 = 20_000
        for (id, state, first, converted) in [("a", "trial", day * 86_400 + 5, nil), ("b", "free_tier", day * 86_400 + 7, "lic-1" as String?), ("c", "trial", (day + 1) * 86_400, nil)] {
            try await db.sql.raw("""
                INSERT INTO keyless_installs (tenant_id, product_id, instance_id, state, first_seen_at, last_seen_at, converted_license_id)
                VALUES ('acme', 'app', \(bind: id), \(bind: state), \(bind: first), \(bind: first + 3_600), \(bind: converted))
                """).run()
        }
        #expect(try await db.migrate(logger: Harness.logger) == Migration.all.dropFirst(before.count).map(\.name))
        let funnel = try await db.funnel(tenantId: "acme", productId: "app", fromDay: day, toDay: day, now: (day + 60) * 86_400)
        #expect(funnel.keylessInstalls == 2 && funnel.trials == 1 && funnel.secondsToConvert == [3_600], "\(funnel)")
        let next = try await db.funnel(tenantId: "acme", productId: "app", fromDay: day + 1, toDay: day + 1, now: (day + 60) * 86_400)
        #expect(next.keylessInstalls == 1 && next.trials == 1 && next.secondsToConvert.isEmpty)
        await db.close()
    }

    @Test func civilDaysRoundTrip() {
        #expect(CivilDay.parse("1970-01-01") == 0 && CivilDay.parse("2026-11-26") == 20_783 && CivilDay.parse("2024-02-29") != nil)
        #expect(CivilDay.parse("2023-02-29") == nil && CivilDay.parse("2026-13-01") == nil && CivilDay.parse("26-11-2026") == nil && CivilDay.parse("2026-1-01") == nil)
        for day: Int64 in [0, 59, 60, 365, 11_016, 20_783, 2_932_896] { #expect(CivilDay.parse(CivilDay.format(day)) == day) }
    }
}
