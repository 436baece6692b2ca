import Foundation
@testable import KeylightServer
import Testing

/// The App Store on the dashboard: the product's app and environments, the key type's StoreKit
/// product, and the license page naming the purchase it came from.
@Suite(.timeLimit(.minutes(6))) struct AppStoreDashboardTests {
    @Test func settingsMappingAndOriginThroughTheDashboard() async throws {
        try await Harness().run { client in
            let (browser, seed) = try await DashboardTests.signedIn(client)
            _ = try await browser.get("/dashboard/t/acme/p/app")
            let saved = try await browser.post("/dashboard/t/acme/p/app/appstore", [("appstore_bundle_id", "com.acme.app"), ("appstore_sandbox", "on")])
            #expect(saved.status == .seeOther, "\(saved.text.prefix(300))")
            var product = try #require(try await client.database.product(tenantId: "acme", id: "app"))
            #expect(product.appStoreBundleId == "com.acme.app" && product.acceptedAppStoreEnvironments == ["Sandbox"])
            let page = try await browser.get("/dashboard/t/acme/p/app")
            #expect(page.text.contains(#"value="com.acme.app""#) && page.text.contains(#"name="appstore_sandbox" checked"#))
            // Bad input is refused and changes nothing.
            // (a form error is a flash on the form's page)
            let refused = try await browser.post("/dashboard/t/acme/p/app/appstore", [("appstore_bundle_id", "com acme")])
            #expect(refused.status == .seeOther)
            #expect(try await browser.get("/dashboard/t/acme/p/app").text.contains("appstore_bundle_id must be a bundle id"))
            product = try #require(try await client.database.product(tenantId: "acme", id: "app"))
            #expect(product.appStoreBundleId == "com.acme.app")
            // Blank removes; no box is Production only.
            _ = try await browser.post("/dashboard/t/acme/p/app/appstore", [("appstore_bundle_id", "")])
            product = try #require(try await client.database.product(tenantId: "acme", id: "app"))
            #expect(product.appStoreBundleId == nil && product.acceptedAppStoreEnvironments == ["Production"])

            let mapped = try await browser.post("/dashboard/t/acme/p/app/key-types/\(seed.keyType)/merchants", [
                ("paddle_price_id", ""), ("lemonsqueezy_variant_id", ""), ("polar_product_id", ""), ("appstore_product_id", "com.acme.app.pro"),
            ])
            #expect(mapped.status == .seeOther)
            let keyType = try #require(try await client.database.keyType(tenantId: "acme", productId: "app", id: seed.keyType))
            #expect(keyType.appStoreProductId == "com.acme.app.pro")

            // A license an App Store purchase became shows where it came from.
            let payload = try #require(EventJSON.parse(Array(#"{"originalTransactionId":"2000000123","transactionId":"2000000123","bundleId":"com.acme.app","productId":"com.acme.app.pro","environment":"Sandbox","signedDate":1781076246000}"#.utf8)))
            let transaction = try #require(AppStoreTransaction(payload))
            let (license, _) = try await client.database.appStoreLicense(
                AppStorePurchase(tenantId: "acme", productId: "app", keyType: keyType, keyPrefix: "ACME", transaction: transaction), sealer: .ephemeral(), now: client.clock.unixSeconds
            )
            let licensePage = try await browser.get("/dashboard/t/acme/p/app/licenses/\(license.id)")
            #expect(licensePage.text.contains("App Store, original transaction 2000000123 (Sandbox)"))
        }
    }

    /// The same settings through the admin API: each bad value a 400 naming the field, a StoreKit
    /// product mapped to a second key type a 409, and nothing changed by any of them.
    @Test func theAdminAPIValidatesTheAppStoreSettings() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let set = try await client.admin(.patch, "/tenants/acme/products/app", ["appstore_bundle_id": "com.acme.app", "appstore_environments": ["Sandbox", "Production"]])
            #expect(set.status == .ok && set["appstore_bundle_id"] as? String == "com.acme.app" && set["appstore_environments"] as? [String] == ["Production", "Sandbox"])
            for (field, value) in [
                ("appstore_bundle_id", "com acme" as Any), ("appstore_bundle_id", ""), ("appstore_bundle_id", String(repeating: "a", count: 156)),
                ("appstore_environments", ["Staging"]), ("appstore_environments", [String]()), ("appstore_environments", ["Sandbox", "Sandbox"]),
                ("appstore_environments", "Production"),
            ] {
                let refused = try await client.admin(.patch, "/tenants/acme/products/app", [field: value])
                #expect(refused.status == .badRequest && (refused["error"] as? String ?? "").contains(field), "\(field)=\(value): \(refused.text)")
            }
            #expect(try await client.admin(.patch, "/tenants/acme/products/app", ["appstore_bundle": "com.acme.app"]).code == "UNKNOWN_FIELD")
            let product = try #require(try await client.database.product(tenantId: "acme", id: "app"))
            #expect(product.appStoreBundleId == "com.acme.app" && product.acceptedAppStoreEnvironments == ["Production", "Sandbox"])
            // One StoreKit product is one key type.
            #expect(try await client.admin(.patch, "/tenants/acme/products/app/key-types/\(seed.keyType)", ["appstore_product_id": "com.acme.app.pro"]).status == .ok)
            #expect(try await client.admin(.post, "/tenants/acme/products/app/key-types", [
                "id": "team", "display_name": "Team", "activation_limit": 10, "fallback_access": false, "entitlements": ["pro"],
            ]).status == .created)
            let taken = try await client.admin(.patch, "/tenants/acme/products/app/key-types/team", ["appstore_product_id": "com.acme.app.pro"])
            #expect(taken.status == .conflict, "\(taken.text)")
            #expect(try await client.database.keyType(tenantId: "acme", productId: "app", id: "team")?.appStoreProductId == nil)
            // null unmaps; then the other key type may take it.
            #expect(try await client.admin(.patch, "/tenants/acme/products/app/key-types/\(seed.keyType)", ["appstore_product_id": NSNull()]).status == .ok)
            #expect(try await client.admin(.patch, "/tenants/acme/products/app/key-types/team", ["appstore_product_id": "com.acme.app.pro"]).status == .ok)
        }
    }
}
