import Crypto
import Foundation
import KeylightCore
@testable import KeylightServer
import Testing

/// The dashboard's part of seats and offline activation: the license page's response download,
/// the product's portal switch and link, and key types' offline lease length.
@Suite(.timeLimit(.minutes(6))) struct DashboardOfflineTests {
    @Test func theLicensePageTurnsAPastedRequestIntoAResponseFileAuditedAsTheUser() async throws {
        try await Harness().run { client in
            let (browser, seed) = try await DashboardTests.signedIn(client)
            let page = "/dashboard/t/acme/p/app/licenses/\(seed.licenseId)"
            _ = try await browser.get(page)
            let device = Curve25519.Signing.PrivateKey()
            let download = try await browser.post(page + "/offline-response", [("request", SeatsAndOfflineTests.request(device: device))])
            #expect(download.status == .ok, "\(download.text)")
            #expect(download.headers[.contentDisposition]?.hasPrefix("attachment; filename=\"keylight-activation-") == true)
            let response = try OfflineActivationResponse(armored: download.text)
            #expect(response.lease.licenseKeyHash == (try LicenseKey(seed.licenseKey).keyHash))
            #expect(response.isBound(to: "air-gapped-1", deviceKey: device.publicKey, keyset: try await client.keyset()))
            let after = try await browser.get(page)
            #expect(after.text.contains("(offline)") && after.text.contains("offline-response"))
            let actors = try await client.database.sql.raw("SELECT actor FROM audit_log WHERE action = 'instance.activate'").all(decodingColumn: "actor", as: String.self)
            #expect(actors == ["user:\(DashboardTests.email)"])
            // A malformed request goes back to the license page with the reason, and makes no instance.
            let bad = try await browser.post(page + "/offline-response", [("request", "not a request")])
            #expect(bad.status == .seeOther && bad.location == page, "\(bad.status)")
            #expect((try await browser.get(page)).text.contains("The activation request is malformed"))
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances") == 1)
        }
    }

    @Test func theProductPageLinksThePortalAndItsSettingsSwitchItOff() async throws {
        try await Harness().run { client in
            let (browser, _) = try await DashboardTests.signedIn(client)
            let product = try await browser.get("/dashboard/t/acme/p/app")
            #expect(product.text.contains("href=\"/portal/acme/app\"") && product.text.contains("name=\"portal_enabled\" checked"))
            #expect(try await client.request(.get, "/portal/acme/app").status == .ok)
            // Saving the settings without the box ticked closes the portal, and the link goes.
            _ = try await browser.post("/dashboard/t/acme/p/app", [("name", "App"), ("trial_duration_days", "14"), ("free_tier_enabled", "on")])
            #expect(try await client.database.product(tenantId: "acme", id: "app")?.portalEnabled == false)
            #expect(!(try await browser.get("/dashboard/t/acme/p/app")).text.contains("href=\"/portal/acme/app\""))
            #expect(try await client.request(.get, "/portal/acme/app").status == .notFound)

            // A key type's offline lease length, from the form, shown in the table.
            _ = try await browser.post("/dashboard/t/acme/p/app/key-types", [
                ("id", "lab"), ("display_name", "Lab"), ("activation_limit", "2"), ("offline_lease_days", "30"),
            ])
            #expect(try await client.database.keyType(tenantId: "acme", productId: "app", id: "lab")?.offlineLeaseDays == 30)
            #expect((try await browser.get("/dashboard/t/acme/p/app")).text.contains("30 days"))
        }
    }
}
