import Foundation
@testable import KeylightServer
import SQLKit
import Testing

/// The dashboard's pages for merchants of record: each provider's settings form (secrets sealed,
/// never shown back), the key type's mapping form, the events list with Retry, and the license
/// page naming where a license was paid.
@Suite(.timeLimit(.minutes(6))) struct MerchantDashboardTests {
    @Test func settingsMappingRetryAndSourceThroughTheDashboard() async throws {
        try await Harness().run { client in
            let (browser, seed) = try await DashboardTests.signedIn(client)
            let tenantPage = try await browser.get("/dashboard/t/acme")
            #expect(tenantPage.text.contains("/dashboard/t/acme/paddle") && tenantPage.text.contains("/dashboard/t/acme/lemonsqueezy") && tenantPage.text.contains("/dashboard/t/acme/polar"))

            let paddle = try await browser.get("/dashboard/t/acme/paddle")
            #expect(paddle.status == .ok && paddle.text.contains("/paddle/webhook/acme") && paddle.text.contains("not connected"))
            let saved = try await browser.post("/dashboard/t/acme/paddle", [("webhook_secret", MerchantTests.paddleSecret), ("api_key", "pdl_apikey_dash"), ("environment", "sandbox")])
            #expect(saved.status == .seeOther, "\(saved.text.prefix(300))")
            let shown = try await browser.get("/dashboard/t/acme/paddle")
            #expect(shown.text.contains("connected") && !shown.text.contains(MerchantTests.paddleSecret) && !shown.text.contains("pdl_apikey_dash"))
            #expect(shown.text.contains(#"value="sandbox" selected"#))
            // Forms are strict: a field the form does not have is refused, and nothing changes.
            let typo = try await browser.post("/dashboard/t/acme/polar", [("webhook_secret", "whsec_x"), ("webhok", "1")])
            #expect(typo.status == .badRequest)
            #expect(try await client.admin(.get, "/tenants/acme/polar").status == .notFound)
            #expect(try await browser.post("/dashboard/t/acme/lemonsqueezy", [("webhook_secret", "lemon-secret"), ("accept_test_mode", "on")]).status == .seeOther)
            #expect(try await client.admin(.get, "/tenants/acme/lemonsqueezy")["accept_test_mode"] as? Bool == true)

            // Map the key type from the product page, then a purchase of an unmapped price is retried from the page.
            let mapped = try await browser.post("/dashboard/t/acme/p/app/key-types/\(seed.keyType)/merchants", [
                ("paddle_price_id", MerchantTests.price), ("lemonsqueezy_variant_id", ""), ("polar_product_id", ""),
            ])
            #expect(mapped.status == .seeOther)
            #expect(try await client.database.keyType(tenantId: "acme", productId: "app", id: seed.keyType)?.paddlePriceId == MerchantTests.price)
            let other = "pri_01unmappedunmappedunmapped"
            let event = MerchantTests.transaction("txn_dash", price: other, eventId: "evt_dash")
            #expect(try await MerchantTests.paddle(client, event)["outcome"] as? String == "unmapped")
            let listed = try await browser.get("/dashboard/t/acme/paddle")
            #expect(listed.text.contains("evt_dash") && listed.text.contains("unmapped") && listed.text.contains("/paddle/events/evt_dash/retry"))
            _ = try await browser.post("/dashboard/t/acme/p/app/key-types/\(seed.keyType)/merchants", [("paddle_price_id", other), ("lemonsqueezy_variant_id", ""), ("polar_product_id", "")])
            #expect(try await browser.post("/dashboard/t/acme/paddle/events/evt_dash/retry").status == .seeOther)
            let license = try #require(try await MerchantTests.paid(client, order: "txn_dash").first)
            let page = try await browser.get("/dashboard/t/acme/p/app/licenses/\(license.id)")
            #expect(page.text.contains("Paddle, transaction txn_dash"))
            // Disconnect: the webhook answers 404.
            #expect(try await browser.post("/dashboard/t/acme/paddle/disconnect").status == .seeOther)
            #expect(try await MerchantTests.paddle(client, MerchantTests.transaction("txn_after")).status == .notFound)
        }
    }
}
