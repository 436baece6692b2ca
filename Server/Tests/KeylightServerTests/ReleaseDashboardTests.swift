import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import KeylightServerTestSupport
import SQLKit
import Testing

/// The dashboard's releases page (issue 51, point 6): the feed's address and Sparkle key, each
/// release with its downloads and the licensed devices on it, the strand preview, drafts made,
/// published and yanked through its forms, the public feed switch, and a read-only member who
/// sees the figures but may change nothing.
@Suite(.timeLimit(.minutes(6))) struct ReleaseDashboardTests {
    static let page = "/dashboard/t/acme/p/app/releases"

    /// The HTML of one release's row.
    static func row(_ html: String, _ id: String) -> String {
        html.components(separatedBy: "id=\"release-\(id)\"").dropFirst().first?.components(separatedBy: "</tr>").first ?? ""
    }

    /// Activates a device on the seed's license with this telemetry; answers its instance id.
    static func device(_ client: Client, _ seed: Seed, machine: String, platform: String, os: String?, app: String) async throws -> String {
        var body: [String: Any] = [
            "license_key": seed.licenseKey, "instance_name": machine, "machine_hash": machine, "platform": platform, "app_version": app, "sdk_version": "0.12.1",
        ]
        if let os { body["os_version"] = os }
        let reply = try await client.sdk("activate", body, seed: seed)
        #expect(reply.status == .ok, "\(machine): \(reply.text)")
        return try #require(reply["instance_id"] as? String)
    }

    @Test func thePageCountsDownloadsAndDevicesPerReleaseAndPreviewsStrandedMacs() async throws {
        let harness = Harness()
        try await harness.run { client in
            let now = harness.clock.unixSeconds
            let seed = try await client.seed(limit: 10)
            let old = try await ReleaseDeliveryTests.release(client, version: "100", short: "1.0", releasedAt: now - 20 * 86_400)
            let current = try await ReleaseDeliveryTests.release(client, version: "110", short: "1.1", releasedAt: now - 86_400)
            let draft = try await ReleaseDeliveryTests.release(client, version: "120", short: "1.2", releasedAt: now - 3_600, publish: false)

            // One download of 1.1 through the appcast's link; two of 1.0 counted on other days.
            let lease = try ReleaseDeliveryTests.leaseHeader(try await client.activate(seed))
            let feed = try await ReleaseDeliveryTests.get(client, "/acme/app/appcast.xml", lease: lease)
            let link = try #require(ReleaseDeliveryTests.items(feed.text).first { $0.version == "110" }?.url)
            #expect(try await ReleaseDeliveryTests.get(client, ReleaseDeliveryTests.local(link), lease: lease).status == .ok)
            for day in [now / 86_400 - 3, now / 86_400] { try await client.database.recordDownload(releaseId: old, day: day) }

            // Devices as the clients report them: short versions, or the build (110); macOS named three ways.
            _ = try await Self.device(client, seed, machine: "ventura", platform: "macOS", os: "13.6", app: "1.0")
            _ = try await Self.device(client, seed, machine: "sonoma", platform: "macos", os: "14.2.1", app: "1.1")
            _ = try await Self.device(client, seed, machine: "sequoia", platform: "macOS", os: "15.5 (24F74)", app: "1.1")
            _ = try await Self.device(client, seed, machine: "silent", platform: "macOS", os: nil, app: "1.0")
            _ = try await Self.device(client, seed, machine: "node", platform: "darwin", os: "12.7", app: "110")
            _ = try await Self.device(client, seed, machine: "pc", platform: "windows", os: "10.0.22631", app: "1.1")
            // Seen on 1.0 yesterday and on 1.1 today: counted once, for 1.1.
            let upgraded = try await Self.device(client, seed, machine: "upgraded", platform: "macOS", os: "14.0", app: "1.0")
            harness.clock.advance(by: 86_400)
            let validated = try await client.sdk("validate", [
                "license_key": seed.licenseKey, "instance_id": upgraded, "platform": "macOS", "os_version": "14.0", "app_version": "1.1",
            ], seed: seed)
            #expect(validated.status == .ok, "\(validated.text)")
            let today = harness.clock.unixSeconds / 86_400
            // Not counted: a licensed Mac last seen 40 days ago, and a trial.
            for (day, kind, device) in [(today - 40, "licensed", "gone"), (today, "keyless", "trial")] {
                try await client.database.sql.raw("""
                    INSERT INTO device_days (tenant_id, product_id, day, kind, device_id, app_version, platform, os_version)
                    VALUES ('acme', 'app', \(bind: day), \(bind: kind), \(bind: device), '1.0', 'macOS', '12.0')
                    """).run()
            }
            #expect(try await eventually {
                try await client.count("SELECT COUNT(*) AS n FROM device_days WHERE kind = 'licensed' AND platform IS NOT NULL AND day >= \(today - 29)") == 8
            })

            // Signed in after the clock moved: a session idle for a day is over.
            try await DashboardTests.user(client)
            let browser = DashboardBrowser(client)
            try await browser.signIn(DashboardTests.email, DashboardTests.password)
            let page = try await browser.get(Self.page)
            #expect(page.status == .ok, "\(page.status) \(page.text.prefix(300))")
            let key = try #require(try await client.admin(.get, "/tenants/acme/products/app")["sparkle_public_key"] as? String)
            #expect(page.text.contains("/acme/app/appcast.xml</code>"))
            #expect(page.text.contains("&lt;key&gt;SUPublicEDKey&lt;/key&gt;\n&lt;string&gt;\(key)&lt;/string&gt;"), "\(page.text)")
            #expect(page.text.contains("The server signs every uploaded file") && page.text.contains("id=\"public-feed-state\">off<"))
            let (oldRow, currentRow, draftRow) = (Self.row(page.text, old), Self.row(page.text, current), Self.row(page.text, draft))
            // 1.0: two downloads, Ventura and the silent Mac. 1.1: one download; Sonoma, Sequoia,
            // the PC, the client that reports the build, and the upgraded Mac. The draft: nothing.
            #expect(oldRow.contains("<td class=\"downloads\">2</td><td class=\"devices\">2</td>"), "\(oldRow)")
            #expect(currentRow.contains("<td class=\"downloads\">1</td><td class=\"devices\">5</td>"), "\(currentRow)")
            #expect(draftRow.contains("<td class=\"downloads\">0</td><td class=\"devices\">0</td>") && draftRow.contains(">draft<"), "\(draftRow)")
            #expect(currentRow.contains("darwin/universal · 4.0 KiB · signed by server") && currentRow.contains(">published<"), "\(currentRow)")
            // Publish only the draft that has a file; yank only what is published.
            #expect(draftRow.contains("/releases/\(draft)/publish\"") && !draftRow.contains("/yank\""))
            #expect(oldRow.contains("/releases/\(old)/yank\"") && !oldRow.contains("/publish\""))
            #expect(page.text.contains("name=\"short_version\"") && page.text.contains("keylight release publish"))

            // Six licensed Macs seen in 30 days; 14.0 strands Ventura (13.6) and 12.7, not the Mac
            // on 14.0 itself; the silent one is of unknown version.
            let strand = try await browser.get(Self.page + "?min_system=14.0")
            #expect(strand.status == .ok)
            #expect(strand.text.contains("Raising the minimum to macOS 14.0 would strand 2 of 6 active licensed Mac devices (1 of unknown version)."), "\(strand.text)")
            let higher = try await browser.get(Self.page + "?min_system=15")
            #expect(higher.text.contains("Raising the minimum to macOS 15 would strand 4 of 6 active licensed Mac devices (1 of unknown version)."))
            let releases = try #require(client.server.releases)
            #expect(try await releases.strandPreview(tenantId: "acme", productId: "app", minimumSystem: "14.0")
                == StrandPreview(minimumSystem: "14.0", stranded: 2, macDevices: 6, unknownVersion: 1))
            // A version that is none: the page, with the reason beside the field.
            let bad = try await browser.get(Self.page + "?min_system=fourteen")
            #expect(bad.status == .badRequest && bad.text.contains("id=\"strand-error\">The minimum macOS is a version such as 13.0 or 14.2.1.<"))
            #expect(bad.text.contains("id=\"release-\(old)\"") && !bad.text.contains("would strand"))
        }
    }

    @Test func draftsArePublishedAndYankedAndTheFeedTurnedPublicThroughTheForms() async throws {
        try await Harness().run { client in
            let (browser, _) = try await DashboardTests.signedIn(client)
            _ = try await browser.get(Self.page)
            let created = try await browser.post(Self.page, [
                ("version", "130"), ("short_version", "1.3"), ("channel", "beta"), ("released_at", "2026-06-01"), ("min_system_version", "14.0"),
                ("notes_markdown", "## Fixes\n- Faster sync"), ("critical_below", "1.1"),
            ])
            #expect(created.status == .seeOther && created.location == Self.page, "\(created.status) \(created.text.prefix(300))")
            let made = try #require(try await client.database.releases(tenantId: "acme", productId: "app", channel: "beta", limit: 10).first)
            #expect(made.version == "130" && made.shortVersion == "1.3" && made.state == .draft && made.releasedAt == 1_780_272_000)
            #expect(made.minSystemVersion == "14.0" && made.critical && made.criticalBelow == "1.1" && made.notesMarkdown == "## Fixes\n- Faster sync")
            let page = try await browser.get(Self.page)
            let row = Self.row(page.text, made.id)
            #expect(page.text.contains("Draft 1.3 (130) created.") && row.contains("critical below 1.1") && row.contains("macOS 14.0 or later"), "\(row)")
            #expect(row.contains("No file yet") && !row.contains("/publish\""))

            // Without a file there is nothing to publish: the reason comes back, nothing changes.
            #expect(try await browser.post("\(Self.page)/\(made.id)/publish").location == Self.page)
            #expect(try await browser.get(Self.page).text.contains("Upload the release&#39;s file before publishing it."))
            #expect(try await client.database.release(tenantId: "acme", productId: "app", id: made.id)?.state == .draft)
            // A date that is none is refused with its reason, and makes no draft.
            #expect(try await browser.post(Self.page, [("version", "140"), ("short_version", "1.4"), ("released_at", "June 1st")]).location == Self.page)
            #expect(try await browser.get(Self.page).text.contains("The release date is a date such as 2026-11-22."))
            #expect(try await client.database.releases(tenantId: "acme", productId: "app", channel: nil, limit: 10).count == 1)

            // With its file it publishes; the public feed then shows it to anyone, until it is yanked.
            #expect(try await ReleaseDeliveryTests.upload(client, made.id, ReleaseDeliveryTests.zip()).status == .created)
            #expect(Self.row(try await browser.get(Self.page).text, made.id).contains("/releases/\(made.id)/publish\""))
            #expect(try await browser.post("\(Self.page)/\(made.id)/publish").status == .seeOther)
            #expect(try await client.database.release(tenantId: "acme", productId: "app", id: made.id)?.state == .published)
            _ = try await browser.get(Self.page)
            #expect(try await browser.post("\(Self.page)/feed", [("public_feed", "on")]).status == .seeOther)
            #expect(try await client.server.releases?.updateSettings(tenantId: "acme", productId: "app").publicFeed == true)
            let open = try await ReleaseDeliveryTests.get(client, "/acme/app/appcast.xml?channel=beta")
            #expect(open.status == .ok && ReleaseDeliveryTests.items(open.text).map(\.version) == ["130"], "\(open.text)")
            let published = try await browser.get(Self.page)
            #expect(published.text.contains("id=\"public-feed-state\">on<") && Self.row(published.text, made.id).contains("/releases/\(made.id)/yank\""))
            #expect(try await browser.post("\(Self.page)/\(made.id)/yank").status == .seeOther)
            #expect(try await client.database.release(tenantId: "acme", productId: "app", id: made.id)?.state == .yanked)
            #expect(ReleaseDeliveryTests.items(try await ReleaseDeliveryTests.get(client, "/acme/app/appcast.xml?channel=beta").text).isEmpty)
            // An unticked box turns the public feed off again.
            _ = try await browser.get(Self.page)
            #expect(try await browser.post("\(Self.page)/feed").status == .seeOther)
            #expect(try await client.server.releases?.updateSettings(tenantId: "acme", productId: "app").publicFeed == false)
            #expect(try await ReleaseDeliveryTests.get(client, "/acme/app/appcast.xml").code == "LEASE_REQUIRED")
            let actions = Set(try await DashboardTests.auditActions(client))
            #expect(["release.create", "release.publish", "release.yank"].allSatisfy { actions.contains($0) }, "\(actions)")
        }
    }

    @Test func aReadOnlyMemberSeesTheFiguresButNoFormAndIsRefused() async throws {
        let harness = Harness()
        try await harness.run { client in
            let now = harness.clock.unixSeconds
            _ = try await client.seed()
            let published = try await ReleaseDeliveryTests.release(client, version: "100", short: "1.0", releasedAt: now - 86_400)
            let draft = try await ReleaseDeliveryTests.release(client, version: "110", short: "1.1", releasedAt: now - 3_600, publish: false)
            try await TeamAccessTests.member(client, "viewer@example.com", role: .readOnly)
            let browser = try await TeamAccessTests.signedIn(client, "viewer@example.com")
            #expect(try await browser.get("/dashboard/t/acme/p/app").text.contains("href=\"/dashboard/t/acme/p/app/releases\""))
            let page = try await browser.get(Self.page)
            #expect(page.status == .ok && page.text.contains("id=\"release-\(published)\"") && page.text.contains("id=\"release-\(draft)\""))
            #expect(!page.text.contains("/publish\"") && !page.text.contains("/yank\"") && !page.text.contains("name=\"short_version\"") && !page.text.contains("/releases/feed\""))
            let before = try await TeamAccessTests.snapshot(client)
            let forms: [(String, [(String, String)])] = [
                ("\(Self.page)/\(draft)/publish", []), ("\(Self.page)/\(published)/yank", []),
                (Self.page, [("version", "120"), ("short_version", "1.2")]), ("\(Self.page)/feed", [("public_feed", "on")]),
            ]
            for (path, fields) in forms {
                _ = try await browser.get(Self.page)  // a fresh CSRF token: the refusal is the role's, not the form's
                let reply = try await browser.post(path, fields)
                #expect(reply.status == .forbidden && reply.text.contains("permission"), "\(path): \(reply.status) \(reply.text.prefix(300))")
            }
            #expect(try await TeamAccessTests.snapshot(client) == before)
            #expect(try await client.database.release(tenantId: "acme", productId: "app", id: draft)?.state == .draft)
            #expect(try await client.database.release(tenantId: "acme", productId: "app", id: published)?.state == .published)
            #expect(try await client.server.releases?.updateSettings(tenantId: "acme", productId: "app").publicFeed == false)
        }
    }
}
