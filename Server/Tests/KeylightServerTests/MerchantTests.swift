import Crypto
import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import SQLKit
import Testing

/// Merchants of record inside one server: settings and mappings through the admin API (sealed,
/// validated, strict), hostile deliveries that change nothing, and, on every database, one
/// license set per order however deliveries race.
@Suite(.timeLimit(.minutes(6))) struct MerchantTests {
    static let paddleSecret = "pdl_ntfset_01hs0t3tw21j988db1pam5xg8m_test+secret/1"
    static let lemonSecret = "lemon-signing-secret"
    static let polarSecret = "whsec_polarLegacySecretExample0123456789ab"
    static let price = "pri_01gsz8x8sawmvhz1pv30nge1ke"

    static func configured(_ client: Client) async throws -> Seed {
        let seed = try await client.seed()
        #expect(try await client.admin(.put, "/tenants/acme/paddle", ["webhook_secret": paddleSecret]).status == .ok)
        #expect(try await client.admin(.put, "/tenants/acme/lemonsqueezy", ["webhook_secret": lemonSecret]).status == .ok)
        #expect(try await client.admin(.put, "/tenants/acme/polar", ["webhook_secret": polarSecret]).status == .ok)
        let mapped = try await client.admin(.patch, "/tenants/acme/products/app/key-types/\(seed.keyType)", [
            "paddle_price_id": price, "lemonsqueezy_variant_id": 42, "polar_product_id": "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0",
        ])
        #expect(mapped.status == .ok && mapped["lemonsqueezy_variant_id"] as? String == "42" && mapped["polar_product_id"] as? String == "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
        return seed
    }

    static func paddle(_ client: Client, _ event: [String: Any], tenant: String = "acme") async throws -> Reply {
        let body = String(decoding: try JSONSerialization.data(withJSONObject: event, options: [.sortedKeys]), as: UTF8.self)
        return try await paddleRaw(client, body, tenant: tenant)
    }

    static func paddleRaw(_ client: Client, _ body: String, tenant: String = "acme") async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json"]
        headers[.init("Paddle-Signature")!] = PaddleSignature.header(timestamp: client.clock.unixSeconds, body: Array(body.utf8), secret: paddleSecret)
        return try await client.request(.post, "/paddle/webhook/\(tenant)", headers: headers, body: body)
    }

    static func transaction(_ id: String, quantity: Any = 1, price: String = price, email: String? = "buyer@shop.example", eventId: String = "evt_\(UUID().uuidString.prefix(8))") -> [String: Any] {
        var data: [String: Any] = [
            "id": id, "status": "completed", "customer_id": "ctm_1", "origin": "web",
            "items": [["price": ["id": price], "quantity": quantity]],
        ]
        if let email { data["custom_data"] = ["email": email] }
        return ["event_id": eventId, "event_type": "transaction.completed", "occurred_at": "2026-11-25T10:00:00Z", "data": data]
    }

    static func paid(_ client: Client, order: String) async throws -> [License] {
        try await client.database.sql.raw("SELECT \(Database.licenseColumns) FROM licenses WHERE payment_order_id = \(bind: order)").all(decoding: License.self)
    }

    // MARK: Settings

    @Test func settingsAreSealedNeverShownAndStrict() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            let missing = try await client.admin(.put, "/tenants/acme/paddle", [:])
            #expect(missing.status == .conflict)
            let typo = try await client.admin(.put, "/tenants/acme/paddle", ["webhook_secret": Self.paddleSecret, "api_kye": "x"])
            #expect(typo.status == .badRequest && typo.code == "UNKNOWN_FIELD")
            // A field of another provider's settings is unknown here.
            #expect(try await client.admin(.put, "/tenants/acme/polar", ["webhook_secret": "whsec_x", "api_key": "k"]).code == "UNKNOWN_FIELD")
            #expect(try await client.admin(.put, "/tenants/acme/paddle", ["webhook_secret": Self.paddleSecret, "environment": "staging"]).status == .badRequest)
            #expect(try await client.admin(.put, "/tenants/acme/lemonsqueezy", ["webhook_secret": "short"]).status == .badRequest)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM merchant_settings") == 0)

            let saved = try await client.admin(.put, "/tenants/acme/paddle", ["webhook_secret": Self.paddleSecret, "api_key": "pdl_apikey_secret_value", "environment": "sandbox"])
            #expect(saved.status == .ok && saved["api_key_set"] as? Bool == true && saved["environment"] as? String == "sandbox")
            #expect(saved["webhook_path"] as? String == "/paddle/webhook/acme")
            let shown = try await client.admin(.get, "/tenants/acme/paddle")
            #expect(!shown.text.contains("pdl_") && !shown.text.contains("secret_value"))
            let stored = try await client.database.sql.raw("SELECT sealed_webhook_secret, sealed_api_key FROM merchant_settings").all()
            let raw = try stored.map { try $0.decode(column: "sealed_webhook_secret", as: String.self) + (try $0.decode(column: "sealed_api_key", as: String?.self) ?? "") }.joined()
            #expect(!raw.isEmpty && !raw.contains("pdl_ntfset") && !raw.contains("secret_value"))
            // Absent keeps, null removes; environment kept.
            let kept = try await client.admin(.put, "/tenants/acme/paddle", ["api_key": NSNull()])
            #expect(kept.status == .ok && kept["api_key_set"] as? Bool == false && kept["environment"] as? String == "sandbox")
            // Disconnected: the webhook is 404 and the settings are gone.
            #expect(try await client.admin(.delete, "/tenants/acme/paddle").status == .noContent)
            #expect(try await Self.paddle(client, Self.transaction("txn_gone")).status == .notFound)
            #expect(try await client.admin(.get, "/tenants/acme/paddle").status == .notFound)
            #expect(try await client.admin(.get, "/tenants/nope/polar").status == .notFound)
        }
    }

    @Test func mappingsAreValidatedAndBelongToOneKeyType() async throws {
        try await Harness().run { client in
            let seed = try await Self.configured(client)
            let path = "/tenants/acme/products/app/key-types/\(seed.keyType)"
            for (field, value) in [("paddle_price_id", "price_1"), ("paddle_price_id", "pri_a b"), ("lemonsqueezy_variant_id", "-4"), ("lemonsqueezy_variant_id", "x"),
                                   ("polar_product_id", "not-a-uuid")] as [(String, Any)] {
                let refused = try await client.admin(.patch, path, [field: value])
                #expect(refused.status == .badRequest, "\(field)=\(value): \(refused.text)")
            }
            #expect(try await client.admin(.patch, path, ["paddel_price_id": Self.price]).code == "UNKNOWN_FIELD")
            // Another key type cannot take a mapped id: a purchase mints one key type.
            #expect(try await client.admin(.post, "/tenants/acme/products/app/key-types", [
                "id": "team", "display_name": "Team", "activation_limit": 10, "fallback_access": false, "entitlements": ["pro"],
            ]).status == .created)
            let taken = try await client.admin(.patch, "/tenants/acme/products/app/key-types/team", ["paddle_price_id": Self.price])
            #expect(taken.status == .conflict)
            // Null unmaps; then the other key type may take it.
            #expect(try await client.admin(.patch, path, ["paddle_price_id": NSNull()]).status == .ok)
            let moved = try await client.admin(.patch, "/tenants/acme/products/app/key-types/team", ["paddle_price_id": Self.price])
            #expect(moved.status == .ok && moved["paddle_price_id"] as? String == Self.price)
            let listed = try await client.admin(.get, "/tenants/acme/products/app/key-types")
            #expect(listed.text.contains("\"lemonsqueezy_variant_id\":\"42\""))
        }
    }

    // MARK: Hostile deliveries

    @Test func hostileDeliveriesChangeNothing() async throws {
        try await Harness().run { client in
            _ = try await Self.configured(client)
            // Signed but not an event, or not JSON: 400, nothing recorded.
            for body in ["not json", "[]", #"{"event_id":"evt_1"}"#, #"{"event_id":"evt_1","event_type":"transaction.completed","data":[]}"#] {
                #expect(try await Self.paddleRaw(client, body).status == .badRequest, "\(body)")
            }
            // Badly signed: 400 before the body is read.
            var headers: HTTPFields = [.contentType: "application/json"]
            headers[.init("Paddle-Signature")!] = "ts=\(client.clock.unixSeconds);h1=\(String(repeating: "0", count: 64))"
            #expect(try await client.request(.post, "/paddle/webhook/acme", headers: headers, body: "{}").status == .badRequest)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM merchant_events") == 0)
            // Unknown and malformed tenants: 404.
            #expect(try await Self.paddle(client, Self.transaction("txn_x"), tenant: "other").status == .notFound)
            #expect(try await client.request(.post, "/polar/webhook/..%2F", body: "{}").status == .notFound)
            // Quantities Keylight will not mint: too many, negative, fractional, text.
            #expect(try await Self.paddle(client, Self.transaction("txn_many", quantity: 1_000_000))["outcome"] as? String == "too_many_licenses")
            #expect(try await Self.paddle(client, Self.transaction("txn_neg", quantity: -3))["outcome"] as? String == "unmapped")
            #expect(try await Self.paddle(client, Self.transaction("txn_frac", quantity: 1.5))["outcome"] as? String == "unmapped")
            #expect(try await Self.paddle(client, Self.transaction("txn_text", quantity: "2"))["outcome"] as? String == "unmapped")
            for order in ["txn_many", "txn_neg", "txn_frac", "txn_text"] {
                #expect(try await Self.paid(client, order: order).isEmpty)
            }
            // An id too long to store is no order; an address that is a header injection is not mailed or kept.
            #expect(try await Self.paddle(client, Self.transaction(String(repeating: "t", count: 300)))["outcome"] as? String == "ignored")
            let injected = try await Self.paddle(client, Self.transaction("txn_inject", email: "a@b.example\r\nBcc: evil@x.example"))
            #expect(injected["outcome"] as? String == "minted")
            #expect(try await Self.paid(client, order: "txn_inject").first?.customerEmail == nil)
            // Bodies past the limit: 413.
            let huge = String(repeating: " ", count: StripeWebhookRoutes.maxBody + 1)
            #expect(try await Self.paddleRaw(client, huge).status == .contentTooLarge)
        }
    }

    @Test func aMintIsAuditedAnnouncedAndShownWithItsSource() async throws {
        try await Harness().run { client in
            let seed = try await Self.configured(client)
            #expect(try await client.admin(.post, "/tenants/acme/webhooks", ["url": "http://127.0.0.1:9/hook"]).status == .created)
            #expect(try await Self.paddle(client, Self.transaction("txn_source", quantity: 2))["outcome"] as? String == "minted")
            let licenses = try await Self.paid(client, order: "txn_source")
            #expect(licenses.count == 2 && licenses.allSatisfy { $0.paymentSource == "paddle" && $0.customerEmail == "buyer@shop.example" })
            let shown = try await client.admin(.get, "/tenants/acme/products/app/licenses/\(licenses[0].id)")
            #expect(shown["payment_source"] as? String == "paddle" && shown["payment_order_id"] as? String == "txn_source")
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'license.create' AND actor = 'paddle'") == 2)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE event_type = 'license.created'") == 2)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM mail_outbox") == 0, "no mail without a mail server")
            // Admin-made licenses name no source.
            let made = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType])
            #expect(made.json.keys.contains("payment_source") && made["payment_source"] is NSNull)
            // The events list shows every outcome, newest first; an unknown outcome filter is 400.
            let events = try await client.admin(.get, "/tenants/acme/paddle/events")
            #expect((events["events"] as? [[String: Any]])?.first?["outcome"] as? String == "minted")
            #expect(try await client.admin(.get, "/tenants/acme/paddle/events?outcome=nope").status == .badRequest)
            #expect(try await client.admin(.post, "/tenants/acme/paddle/events/evt_none/retry").status == .notFound)
            // Deleting the settings takes the list with them (as retrying already was).
            #expect(try await client.admin(.delete, "/tenants/acme/paddle").status == .noContent)
            let gone = try await client.admin(.get, "/tenants/acme/paddle/events")
            #expect(gone.status == .notFound && gone["code"] as? String == "NOT_FOUND", "\(gone.json)")
        }
    }

    @Test func lemonSqueezyTestModeIsTheTenantsChoice() async throws {
        try await Harness().run { client in
            _ = try await Self.configured(client)
            func order(_ id: String) -> String {
                #"{"meta":{"event_name":"order_created","test_mode":true},"data":{"type":"orders","id":"\#(id)","attributes":{"status":"paid","user_email":"t@shop.example","test_mode":true,"first_order_item":{"variant_id":42,"quantity":1}}}}"#
            }
            func send(_ body: String) async throws -> Reply {
                var headers: HTTPFields = [.contentType: "application/json"]
                headers[.init("X-Signature")!] = LemonSqueezySignature.signature(body: Array(body.utf8), secret: Self.lemonSecret)
                return try await client.request(.post, "/lemonsqueezy/webhook/acme", headers: headers, body: body)
            }
            #expect(try await send(order("7"))["outcome"] as? String == "test_mode")
            let on = try await client.admin(.put, "/tenants/acme/lemonsqueezy", ["accept_test_mode": true])
            #expect(on["accept_test_mode"] as? Bool == true)
            #expect(try await send(order("8"))["outcome"] as? String == "minted")
            #expect(try await Self.paid(client, order: "8").count == 1)
        }
    }

    // MARK: Races, on every database

    @Test(arguments: StorageBackend.available)
    func racingDeliveriesOfOneOrderMintItOnce(backend: StorageBackend) async throws {
        try await backend.with(poolSize: 8) { database in
            try await StorageConformanceTests.catalog(database)
            guard case .updated = try await database.setKeyTypeSales(tenantId: "acme", productId: "app", id: "pro", .init(paddlePriceId: Self.price), now: 1, actor: .adminToken) else {
                Issue.record("could not map the price")
                return
            }
            let processor = MerchantEventProcessor(database: database, sealer: .ephemeral())
            func deliver(_ action: MerchantAction, id: String) async throws -> MerchantOutcome {
                try await processor.apply(MerchantEvent(id: id, type: "t", action: action), provider: .paddle, tenantId: "acme", now: 100, sealEvent: { nil })
            }
            let purchase = MerchantAction.purchase(MerchantPurchase(orderId: "txn_race", items: [.init(mappingId: Self.price, quantity: 3)], email: "r@shop.example"))
            // Eight deliveries of one transaction under eight event ids, and each twice.
            let outcomes = try await withThrowingTaskGroup(of: MerchantOutcome.self) { group in
                for index in 0..<16 { group.addTask { try await deliver(purchase, id: "evt_\(index % 8)") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == .minted }.count == 1, "\(outcomes)")
            #expect(outcomes.filter { $0 == .duplicate }.count == 8)
            let minted = try await database.sql.raw("SELECT COUNT(*) AS n FROM licenses WHERE payment_order_id = 'txn_race'").first(decodingColumn: "n", as: Int.self)
            #expect(minted == 3)

            // A refund racing its purchase: whichever lands first, no license stays active.
            let refund = MerchantAction.refund(orderId: "txn_refund_race", full: true, reason: "test")
            let late = MerchantAction.purchase(MerchantPurchase(orderId: "txn_refund_race", items: [.init(mappingId: Self.price, quantity: 1)]))
            async let first = deliver(refund, id: "evt_refund")
            async let second = deliver(late, id: "evt_purchase")
            _ = try await (first, second)
            let active = try await database.sql.raw("""
                SELECT COUNT(*) AS n FROM licenses WHERE payment_order_id = 'txn_refund_race' AND status <> 'revoked'
                """).first(decodingColumn: "n", as: Int.self)
            #expect(active == 0)
        }
    }
}
