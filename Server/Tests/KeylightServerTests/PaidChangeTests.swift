import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Testing

/// Paid upgrades, renewals and seats for licenses already sold (issue 49): each key type's
/// offers, checkouts started for a license, and payments that change that license once per order
/// (never a mint) and are set back by a refund.
@Suite(.timeLimit(.minutes(6))) struct PaidChangeTests {
    static let base = "/tenants/acme/products/app"

    /// A `personal` license (1 device, 1 year of updates) and a `pro` key type to upgrade to,
    /// with Stripe and Paddle prices for the upgrade, a renewal and seats.
    static func catalogue(_ client: Client, restart: Bool = true) async throws -> Seed {
        let seed = try await client.seed(limit: 1, durationDays: 365, entitlements: ["basic"], keyTypeFields: ["updates_days": 365])
        let pro = try await client.admin(.post, "\(base)/key-types", [
            "id": "pro", "display_name": "Pro", "activation_limit": 3, "fallback_access": false, "entitlements": ["basic", "pro"], "updates_days": 730,
        ])
        #expect(pro.status == .created, "\(pro.text)")
        #expect(try await client.admin(.put, "\(base)/key-types/pro/offers", ["upgrade_restarts_updates": restart]).status == .ok)
        let offers = try await client.admin(.put, "\(base)/key-types/\(seed.keyType)/offers", [
            "upgrades": [["to": "pro", "price_label": "$29", "stripe_price_id": "price_up_pro", "paddle_price_id": "pri_01upgradeproaaaaaaaaaaaaaa"]],
            "renewal": ["price_label": "$19 a year", "stripe_price_id": "price_renew", "paddle_price_id": "pri_01renewalaaaaaaaaaaaaaaaa"],
            "seats": ["price_label": "$9 per device", "stripe_price_id": "price_seat", "paddle_price_id": "pri_01seatsaaaaaaaaaaaaaaaaaa"],
        ])
        #expect(offers.status == .ok, "\(offers.text)")
        return seed
    }

    static func stripeCheckout(_ seed: Seed, licenseId: String, price: String, session: String, paymentIntent: String, quantity: Int = 1) -> [String: Any] {
        [
            "id": session, "object": "checkout.session", "customer": "cus_1", "payment_intent": paymentIntent, "payment_status": "paid",
            "customer_details": ["email": "buyer@example.com"],
            "metadata": [
                "tenant_id": "acme", "product_id": "app", "key_type_id": seed.keyType, "keylight_license_id": licenseId,
                "keylight_price_id": price, "keylight_quantity": "\(quantity)",
            ],
        ]
    }

    static func stripe(_ client: Client, _ type: String, _ object: [String: Any]) async throws -> Reply {
        let body = StripeWebhookTests.event(type, object)
        return try await StripeWebhookTests.deliver(client, body, signature: StripeWebhookTests.signature(body, at: client.clock.unixSeconds))
    }

    @Test func offersAreCheckedStoredAndShown() async throws {
        try await Harness().run { client in
            let seed = try await Self.catalogue(client)
            let read = try await client.admin(.get, "\(Self.base)/key-types/\(seed.keyType)/offers")
            #expect(read.status == .ok)
            let upgrades = try #require(read["upgrades"] as? [[String: Any]])
            #expect(upgrades.count == 1 && upgrades[0]["to"] as? String == "pro" && upgrades[0]["stripe_price_id"] as? String == "price_up_pro")
            #expect((read["seats"] as? [String: Any])?["price_label"] as? String == "$9 per device")
            #expect(try await client.admin(.get, "\(Self.base)/key-types/pro/offers")["upgrade_restarts_updates"] as? Bool == true)
            let bad: [([String: Any], HTTPResponse.Status)] = [
                (["upgrades": [["to": "nowhere", "stripe_price_id": "price_x"]]], .unprocessableContent),
                (["upgrades": [["to": seed.keyType, "stripe_price_id": "price_x"]]], .badRequest),
                (["upgrades": [["to": "pro"]]], .badRequest),
                (["renewal": ["to": "pro", "stripe_price_id": "price_x"]], .badRequest),
                (["renewal": ["stripe_price_id": "not-a-price"]], .badRequest),
                (["renewal": ["stripe_price_id": "price_x"], "seats": ["stripe_price_id": "price_x"]], .badRequest),
                (["surprise": true], .badRequest),
            ]
            for (body, status) in bad {
                let reply = try await client.admin(.put, "\(Self.base)/key-types/\(seed.keyType)/offers", body)
                #expect(reply.status == status, "\(body): \(reply.text)")
            }
            // A price that already buys a new license, or another key type's offer, buys nothing else.
            #expect(try await client.admin(.patch, "\(Self.base)/key-types/pro", ["stripe_price_id": "price_new_pro"]).status == .ok)
            #expect(try await client.admin(.put, "\(Self.base)/key-types/\(seed.keyType)/offers", ["renewal": ["stripe_price_id": "price_new_pro"]]).status == .conflict)
            #expect(try await client.admin(.put, "\(Self.base)/key-types/pro/offers", ["renewal": ["stripe_price_id": "price_renew"]]).status == .conflict)
            // Nothing above changed what was stored.
            let after = try await client.admin(.get, "\(Self.base)/key-types/\(seed.keyType)/offers")
            #expect(NSDictionary(dictionary: after.json) == NSDictionary(dictionary: read.json), "\(after.text) vs \(read.text)")
        }
    }

    @Test(arguments: StorageBackend.available)
    func aStripeUpgradeAppliesOnceKeepsTheKeyAndARefundSetsItBack(_ backend: StorageBackend) async throws {
        let harness = try await Harness.on(backend)
        try await harness.run { client in
            let seed = try await Self.catalogue(client)
            #expect(try await client.admin(.put, "/tenants/acme/stripe", ["webhook_secret": StripeWebhookTests.secret]).status == .ok)
            let activated = try await client.activate(seed)
            let instance = try #require(activated["instance_id"] as? String)
            let before = try await client.admin(.get, "\(Self.base)/licenses/\(seed.licenseId)")
            let licenses = try await client.count("SELECT COUNT(*) AS n FROM licenses")

            harness.clock.advance(by: 100 * 86_400)
            let upgrade = Self.stripeCheckout(seed, licenseId: seed.licenseId, price: "price_up_pro", session: "cs_upgrade_1", paymentIntent: "pi_upgrade_1")
            let first = try await Self.stripe(client, "checkout.session.completed", upgrade)
            #expect(first["outcome"] as? String == "applied", "\(first.text)")
            // The same payment again (another delivery, another event id) changes nothing more.
            #expect(try await Self.stripe(client, "checkout.session.completed", upgrade)["outcome"] as? String == "already_applied")
            #expect(try await client.count("SELECT COUNT(*) AS n FROM licenses") == licenses)

            let upgraded = try await client.admin(.get, "\(Self.base)/licenses/\(seed.licenseId)")
            #expect(upgraded["key_type_id"] as? String == "pro" && upgraded["activation_limit"] as? Int == 3)
            #expect(upgraded["masked_key"] as? String == before["masked_key"] as? String)
            // Pro restarts the updates window: two years from the upgrade.
            #expect(upgraded["updates_until"] as? Int64 == harness.clock.unixSeconds + 730 * 86_400)
            #expect(upgraded["expires_at"] as? Int64 == before["expires_at"] as? Int64)
            let lease = try #require(try await client.validate(seed, instance: instance).lease)
            #expect(lease.entitlements.contains("pro"))

            // The refund sets every field back, and keeps the license and its device.
            let refund: [String: Any] = ["id": "ch_1", "object": "charge", "payment_intent": "pi_upgrade_1", "refunded": true]
            #expect(try await Self.stripe(client, "charge.refunded", refund)["outcome"] as? String == "undone")
            let undone = try await client.admin(.get, "\(Self.base)/licenses/\(seed.licenseId)")
            #expect(undone["key_type_id"] as? String == seed.keyType && undone["status"] as? String == "active")
            #expect(undone["updates_until"] as? Int64 == before["updates_until"] as? Int64)
            #expect(try await Self.stripe(client, "charge.refunded", refund)["outcome"] as? String != "undone")
            #expect(try await client.validate(seed, instance: instance).lease?.entitlements.contains("pro") == false)
            // The refunded session, delivered again, does not upgrade it a second time.
            #expect(try await Self.stripe(client, "checkout.session.completed", upgrade)["outcome"] as? String == "refunded")
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'license.update'") == 2)
        }
    }

    @Test(arguments: StorageBackend.available)
    func paddleRenewalAndSeatsApplyOnceAndARefundUndoesThem(_ backend: StorageBackend) async throws {
        let harness = try await Harness.on(backend)
        try await harness.run { client in
            let seed = try await Self.catalogue(client)
            #expect(try await client.admin(.put, "/tenants/acme/paddle", ["webhook_secret": MerchantTests.paddleSecret]).status == .ok)
            let minted = try await client.admin(.get, "\(Self.base)/licenses/\(seed.licenseId)")
            let expires = try #require(minted["expires_at"] as? Int64)
            let updates = try #require(minted["updates_until"] as? Int64)
            func paid(_ order: String, price: String, quantity: Int = 1) -> [String: Any] {
                var event = MerchantTests.transaction(order, quantity: quantity, price: price)
                var data = event["data"] as! [String: Any]
                data["custom_data"] = ["keylight_license_id": seed.licenseId]
                event["data"] = data
                return event
            }
            let renewal = paid("txn_renew_1", price: "pri_01renewalaaaaaaaaaaaaaaaa")
            #expect(try await MerchantTests.paddle(client, renewal)["outcome"] as? String == "applied")
            var again = renewal
            again["event_id"] = "evt_again"
            #expect(try await MerchantTests.paddle(client, again)["outcome"] as? String == "already_applied")
            let renewed = try await client.admin(.get, "\(Self.base)/licenses/\(seed.licenseId)")
            #expect(renewed["expires_at"] as? Int64 == expires + 365 * 86_400 && renewed["updates_until"] as? Int64 == updates + 365 * 86_400)

            #expect(try await MerchantTests.paddle(client, paid("txn_seats_1", price: "pri_01seatsaaaaaaaaaaaaaaaaaa", quantity: 2))["outcome"] as? String == "applied")
            #expect(try await client.admin(.get, "\(Self.base)/licenses/\(seed.licenseId)")["activation_limit"] as? Int == 3)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM licenses WHERE payment_order_id IS NOT NULL") == 0)

            func refund(_ transaction: String) -> [String: Any] {
                ["event_id": "evt_r_\(transaction)", "event_type": "adjustment.created", "occurred_at": "2026-11-26T10:00:00Z",
                 "data": ["id": "adj_\(transaction)", "action": "refund", "status": "approved", "transaction_id": transaction, "type": "full"]]
            }
            #expect(try await MerchantTests.paddle(client, refund("txn_seats_1"))["outcome"] as? String == "undone")
            #expect(try await client.admin(.get, "\(Self.base)/licenses/\(seed.licenseId)")["activation_limit"] as? Int == 1)
            #expect(try await MerchantTests.paddle(client, refund("txn_renew_1"))["outcome"] as? String == "undone")
            let back = try await client.admin(.get, "\(Self.base)/licenses/\(seed.licenseId)")
            #expect(back["expires_at"] as? Int64 == expires && back["updates_until"] as? Int64 == updates && back["status"] as? String == "active")
            // A refund that arrives before its payment: the payment then changes nothing.
            #expect(try await MerchantTests.paddle(client, refund("txn_seats_2"))["outcome"] as? String != "undone")
            #expect(try await MerchantTests.paddle(client, paid("txn_seats_2", price: "pri_01seatsaaaaaaaaaaaaaaaaaa"))["outcome"] as? String == "refunded")
            #expect(try await client.admin(.get, "\(Self.base)/licenses/\(seed.licenseId)")["activation_limit"] as? Int == 1)
            // A price not offered to this license's key type, and a license that is not there: nothing happens.
            #expect(try await MerchantTests.paddle(client, paid("txn_x", price: "pri_01gsz8x8sawmvhz1pv30nge1ke"))["outcome"] as? String == "no_offer")
        }
    }

    @Test func aCheckoutForALicenseSellsItsKeyTypesOffer() async throws {
        try await CheckoutTests.withStripe { client, stripe in
            let (_, key) = try await CheckoutTests.configured(client)
            let seed = try await Self.catalogue(client)
            var body = CheckoutTests.body(seed)
            body["upgrade_from"] = seed.licenseId
            body["key_type_id"] = "pro"
            let reply = try await CheckoutTests.checkout(client, key: key, body)
            #expect(reply.status == .ok, "\(reply.text)")
            let form = CheckoutTests.form(try #require(stripe.requests.last))
            #expect(form["line_items[0][price]"] == "price_up_pro" && form["mode"] == "payment")
            #expect(form["metadata[keylight_license_id]"] == seed.licenseId && form["metadata[keylight_price_id]"] == "price_up_pro")
            #expect(form["metadata[key_type_id]"] == seed.keyType)

            var seats = CheckoutTests.body(seed)
            seats["key_type_id"] = nil
            seats["seats"] = seed.licenseId
            seats["quantity"] = 4
            #expect(try await CheckoutTests.checkout(client, key: key, seats).status == .ok)
            let seatForm = CheckoutTests.form(try #require(stripe.requests.last))
            #expect(seatForm["line_items[0][price]"] == "price_seat" && seatForm["line_items[0][quantity]"] == "4")

            var wrong = CheckoutTests.body(seed)
            wrong["renew"] = "no-such-license"
            wrong["key_type_id"] = nil
            #expect(try await CheckoutTests.checkout(client, key: key, wrong).status == .notFound)
            var both = seats
            both["renew"] = seed.licenseId
            #expect(try await CheckoutTests.checkout(client, key: key, both).status == .badRequest)
            var unoffered = CheckoutTests.body(seed)
            unoffered["upgrade_from"] = seed.licenseId
            unoffered["key_type_id"] = seed.keyType
            #expect(try await CheckoutTests.checkout(client, key: key, unoffered).status == .conflict)
        }
    }

    @Test func anOfferAppliesOnlyToALicenseOnItsKeyTypeAndRefundsTakeBackTheirOwnAmount() async throws {
        try await Harness().run { client in
            let seed = try await Self.catalogue(client)
            #expect(try await client.admin(.put, "/tenants/acme/paddle", ["webhook_secret": MerchantTests.paddleSecret]).status == .ok)
            #expect(try await client.admin(.put, "\(Self.base)/key-types/pro/offers", [
                "upgrade_restarts_updates": true, "seats": ["price_label": "$5", "paddle_price_id": "pri_01proseatsaaaaaaaaaaaaaaa"],
            ]).status == .ok)
            func paid(_ order: String, price: String, quantity: Int = 1) -> [String: Any] {
                var event = MerchantTests.transaction(order, quantity: quantity, price: price)
                var data = event["data"] as! [String: Any]
                data["custom_data"] = ["keylight_license_id": seed.licenseId]
                event["data"] = data
                return event
            }
            // Seats bought twice, the first refunded: only its own seats come off.
            #expect(try await MerchantTests.paddle(client, paid("txn_a", price: "pri_01seatsaaaaaaaaaaaaaaaaaa", quantity: 2))["outcome"] as? String == "applied")
            #expect(try await MerchantTests.paddle(client, paid("txn_b", price: "pri_01seatsaaaaaaaaaaaaaaaaaa", quantity: 3))["outcome"] as? String == "applied")
            #expect(try await client.admin(.get, "\(Self.base)/licenses/\(seed.licenseId)")["activation_limit"] as? Int == 6)
            let refundA: [String: Any] = ["event_id": "evt_ra", "event_type": "adjustment.created", "occurred_at": "2026-11-26T10:00:00Z",
                                          "data": ["id": "adj_a", "action": "refund", "status": "approved", "transaction_id": "txn_a", "type": "full"]]
            #expect(try await MerchantTests.paddle(client, refundA)["outcome"] as? String == "undone")
            #expect(try await client.admin(.get, "\(Self.base)/licenses/\(seed.licenseId)")["activation_limit"] as? Int == 4)
            // Upgraded to pro: personal's seat price no longer buys anything for it, nor does the
            // upgrade again (it would restart the updates window at upgrade price); pro's own does.
            #expect(try await MerchantTests.paddle(client, paid("txn_up", price: "pri_01upgradeproaaaaaaaaaaaaaa"))["outcome"] as? String == "applied")
            let upgraded = try await client.admin(.get, "\(Self.base)/licenses/\(seed.licenseId)")
            #expect(try await MerchantTests.paddle(client, paid("txn_c", price: "pri_01seatsaaaaaaaaaaaaaaaaaa"))["outcome"] as? String == "no_offer")
            #expect(try await MerchantTests.paddle(client, paid("txn_up2", price: "pri_01upgradeproaaaaaaaaaaaaaa"))["outcome"] as? String == "no_offer")
            #expect(try await client.admin(.get, "\(Self.base)/licenses/\(seed.licenseId)")["updates_until"] as? Int64 == upgraded["updates_until"] as? Int64)
            #expect(try await MerchantTests.paddle(client, paid("txn_d", price: "pri_01proseatsaaaaaaaaaaaaaaa"))["outcome"] as? String == "applied")
        }
    }
}
