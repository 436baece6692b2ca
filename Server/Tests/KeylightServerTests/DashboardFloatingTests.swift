import Foundation
import KeylightCore
@testable import KeylightServer
import Testing

/// The dashboard's part of floating and "updates until" licenses: the key type form and table,
/// and the license page's seats and updates.
@Suite(.timeLimit(.minutes(6))) struct DashboardFloatingTests {
    @Test func aFloatingUpdatesKeyTypeFromTheFormShowsOnTheProductAndLicensePages() async throws {
        let harness = Harness()
        try await harness.run { client in
            let (browser, seed) = try await DashboardTests.signedIn(client)
            let created = try await browser.post("/dashboard/t/acme/p/app/key-types", [
                ("id", "site"), ("display_name", "Site"), ("activation_limit", "5"), ("floating", "on"), ("heartbeat_seconds", "120"),
                ("overage_percent", "20"), ("updates_days", "365"), ("entitlements", "pro"),
            ])
            #expect(created.status == .seeOther)
            let keyType = try #require(try await client.database.keyType(tenantId: "acme", productId: "app", id: "site"))
            #expect(keyType.floating && keyType.heartbeatSeconds == 120 && keyType.overagePercent == 20 && keyType.updatesDays == 365)
            let product = try await browser.get("/dashboard/t/acme/p/app").text
            #expect(product.contains("5 floating (120 s heartbeat) +20 %") && product.contains("365 days"))
            // The seed's node-locked key type reads as before.
            #expect(product.contains("<td>3</td>") && product.contains("every build"))

            // A bad overage is the form's error, and nothing is created.
            let bad = try await browser.post("/dashboard/t/acme/p/app/key-types", [
                ("id", "bad"), ("display_name", "Bad"), ("activation_limit", "5"), ("overage_percent", "101"),
            ])
            #expect(bad.status == .seeOther)
            #expect(try await client.database.keyType(tenantId: "acme", productId: "app", id: "bad") == nil)

            let minted = harness.clock.unixSeconds
            let license = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": "site"])
            let key = try #require(license["license_key"] as? String)
            let id = try #require(license["id"] as? String)
            for machine in ["m1", "m2", "m3"] { #expect(try await client.activate(seed, key: key, machine: machine).status == .ok) }
            let page = "/dashboard/t/acme/p/app/licenses/\(id)"
            var text = try await browser.get(page).text
            #expect(text.contains("floating, 3 of 5 seats held (20 % overage allowed); 120 s heartbeat"), "\(text)")
            #expect(text.contains("until \(DashboardFormat.day(minted + 365 * 86_400))"))
            // A silent seat stops counting as held at its deadline, before any sweep.
            harness.clock.advance(by: 121)
            text = try await browser.get(page).text
            #expect(text.contains("floating, 0 of 5 seats held"))

            let plain = try await browser.get("/dashboard/t/acme/p/app/licenses/\(seed.licenseId)").text
            #expect(plain.contains("0 of 3 devices") && plain.contains("every build"))
        }
    }

    @Test func daysAreWrittenInUTC() {
        #expect(DashboardFormat.day(1_826_841_600) == "2027-11-22")
        #expect(DashboardFormat.day(1_826_927_999) == "2027-11-22")
        #expect(DashboardFormat.day(0) == "1970-01-01")
    }
}
