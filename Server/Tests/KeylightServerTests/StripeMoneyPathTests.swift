// Longer than 300 lines: each test is one whole money path (Stripe events in the orders Stripe
// may send them), and they share the event helpers at the top of the suite.

import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Testing

/// Protocol 6.6 (issue 15): licenses only for money received, Stripe events in any order, one
/// Stripe account behind several tenants, events that cannot apply yet, and the buyer's
/// one-time pick-up of the key on the Checkout success page.
@Suite(.timeLimit(.minutes(6))) struct StripeMoneyPathTests {
    typealias Stripe = StripeWebhookTests

    /// Signs and delivers one event to `tenant`'s endpoint.
    static func send(_ client: Client, _ type: String, _ object: [String: Any], id: String = "evt_\(UUID().uuidString.prefix(12))", tenant: String = "acme", created: Int64? = nil) async throws -> Reply {
        var event: [String: Any] = ["id": id, "object": "event", "type": type, "data": ["object": object]]
        if let created { event["created"] = created }
        let body = String(decoding: try JSONSerialization.data(withJSONObject: event, options: [.sortedKeys]), as: UTF8.self)
        var headers: HTTPFields = [.contentType: "application/json"]
        headers[.init("Stripe-Signature")!] = Stripe.signature(body, at: client.clock.unixSeconds)
        return try await client.request(.post, "/stripe/webhook/\(tenant)", headers: headers, body: body)
    }

    static func outcome(_ client: Client, _ type: String, _ object: [String: Any], id: String = "evt_\(UUID().uuidString.prefix(12))", tenant: String = "acme") async throws -> String? {
        let reply = try await send(client, type, object, id: id, tenant: tenant)
        #expect(reply.status == .ok, "\(type): \(reply.text)")
        return reply["outcome"] as? String
    }

    static func session(_ seed: Seed, id: String, paymentStatus: String, subscription: String? = nil, tenant: String? = nil) -> [String: Any] {
        var metadata = ["product_id": "app", "key_type_id": seed.keyType]
        if let tenant { metadata["tenant_id"] = tenant }
        var object: [String: Any] = [
            "id": id, "object": "checkout.session", "customer": "cus_1", "payment_intent": "pi_\(id)", "payment_status": paymentStatus,
            "customer_details": ["email": "\(id)@shop.example"], "metadata": metadata, "success_url": "https://shop.example/thanks?session_id={CHECKOUT_SESSION_ID}",
        ]
        if let subscription { object["subscription"] = subscription }
        return object
    }

    static func licenses(_ client: Client, session id: String) async throws -> [License] {
        try await client.database.sql.raw("SELECT \(Database.licenseColumns) FROM licenses WHERE customer_email = \(bind: "\(id)@shop.example")").all(decoding: License.self)
    }

    static func pickUp(_ client: Client, _ session: String, tenant: String = "acme", origin: String? = nil) async throws -> Reply {
        var headers: HTTPFields = [:]
        if let origin { headers[.origin] = origin }
        return try await client.request(.get, "/api/\(tenant)/checkout/\(session)/license", headers: headers)
    }

    // MARK: 1. Money first

    @Test func aDelayedPaymentMintsOnlyWhenTheMoneyArrives() async throws {
        try await Harness().run { client in
            let seed = try await Stripe.configured(client)
            // SEPA, ACH, Boleto: completed, but unpaid.
            #expect(try await Self.outcome(client, "checkout.session.completed", Self.session(seed, id: "cs_sepa", paymentStatus: "unpaid")) == "awaiting_payment")
            #expect(try await Self.licenses(client, session: "cs_sepa").isEmpty)
            let waiting = try await Self.pickUp(client, "cs_sepa")
            #expect(waiting.status == .accepted && waiting["status"] as? String == "awaiting_payment" && waiting.headers[.retryAfter] == "2")
            // The money arrives: one license, and a repeat of that event changes nothing.
            let succeeded = Self.session(seed, id: "cs_sepa", paymentStatus: "paid")
            #expect(try await Self.outcome(client, "checkout.session.async_payment_succeeded", succeeded, id: "evt_sepa_ok") == "minted")
            #expect(try await Self.outcome(client, "checkout.session.async_payment_succeeded", succeeded, id: "evt_sepa_ok") == "duplicate")
            #expect(try await Self.outcome(client, "checkout.session.async_payment_succeeded", succeeded, id: "evt_sepa_ok_again") == "already_minted")
            #expect(try await Self.licenses(client, session: "cs_sepa").count == 1)

            // The money never arrives: nothing minted, and the success page says so.
            #expect(try await Self.outcome(client, "checkout.session.completed", Self.session(seed, id: "cs_ach", paymentStatus: "unpaid")) == "awaiting_payment")
            #expect(try await Self.outcome(client, "checkout.session.async_payment_failed", Self.session(seed, id: "cs_ach", paymentStatus: "unpaid")) == "payment_failed")
            #expect(try await Self.licenses(client, session: "cs_ach").isEmpty)
            let failed = try await Self.pickUp(client, "cs_ach")
            #expect(failed.status.code == 402 && failed["code"] as? String == "PAYMENT_FAILED")
            // A late repeat of the unpaid completion does not make the failure look pending again.
            #expect(try await Self.outcome(client, "checkout.session.completed", Self.session(seed, id: "cs_ach", paymentStatus: "unpaid")) == "awaiting_payment")
            #expect(try await Self.pickUp(client, "cs_ach").status.code == 402)

            // Paid at once, or nothing to pay: minted on completed; a later async success adds nothing.
            #expect(try await Self.outcome(client, "checkout.session.completed", Self.session(seed, id: "cs_card", paymentStatus: "paid")) == "minted")
            #expect(try await Self.outcome(client, "checkout.session.async_payment_succeeded", Self.session(seed, id: "cs_card", paymentStatus: "paid")) == "already_minted")
            #expect(try await Self.outcome(client, "checkout.session.completed", Self.session(seed, id: "cs_free", paymentStatus: "no_payment_required")) == "minted")
            #expect(try await Self.licenses(client, session: "cs_card").count == 1)
            #expect(try await Self.licenses(client, session: "cs_free").count == 1)
            // Status missing or unknown is not money received.
            var odd = Self.session(seed, id: "cs_odd", paymentStatus: "paid")
            odd.removeValue(forKey: "payment_status")
            #expect(try await Self.outcome(client, "checkout.session.completed", odd) == "awaiting_payment")
        }
    }

    @Test func aFailedPaymentRevokesALicenseMintedBeforeTheUpgrade() async throws {
        try await Harness().run { client in
            let seed = try await Stripe.configured(client)
            // As an earlier version did: a license minted on an unpaid completed session.
            let early = try await client.mint(seed)
            try await client.database.sql.raw("UPDATE licenses SET stripe_payment_intent_id = 'pi_cs_boleto' WHERE id = \(bind: early.id)").run()
            #expect(try await Self.outcome(client, "checkout.session.async_payment_failed", Self.session(seed, id: "cs_boleto", paymentStatus: "unpaid")) == "revoked")
            #expect(try await client.database.license(tenantId: "acme", productId: "app", id: early.id)?.status == .revoked)
        }
    }

    // MARK: 2. Any order

    @Test func invoicesMoveExpiryOnlyForwardAndNeverReviveAnEndedSubscription() async throws {
        try await Harness().run { client in
            let seed = try await Stripe.configured(client)
            let now = client.clock.unixSeconds
            func expiry(_ subscription: String) async throws -> Int64? {
                try await client.database.sql.raw("SELECT expires_at FROM licenses WHERE stripe_subscription_id = \(bind: subscription)")
                    .first(decodingColumn: "expires_at", as: Int64?.self) ?? nil
            }
            func invoice(_ subscription: String, end: Int64, newAPI: Bool = false) -> [String: Any] {
                var object: [String: Any] = ["id": "in_\(UUID().uuidString.prefix(8))", "object": "invoice", "lines": ["data": [["period": ["end": end]]]]]
                if newAPI {
                    object["parent"] = ["type": "subscription_details", "subscription_details": ["subscription": subscription]]
                } else {
                    object["subscription"] = subscription
                }
                return object
            }
            #expect(try await Self.outcome(client, "checkout.session.completed", Self.session(seed, id: "cs_sub", paymentStatus: "paid", subscription: "sub_1")) == "minted")
            // A lifetime key type: the first invoice gives the subscription's license its expiry.
            #expect(try await expiry("sub_1") == nil)
            #expect(try await Self.outcome(client, "invoice.paid", invoice("sub_1", end: now + 60 * 86_400)) == "renewed")
            #expect(try await expiry("sub_1") == now + 60 * 86_400)
            // An older invoice, late: nothing moves back.
            #expect(try await Self.outcome(client, "invoice.paid", invoice("sub_1", end: now + 30 * 86_400)) == "stale")
            #expect(try await expiry("sub_1") == now + 60 * 86_400)
            // API versions from 2025-03-31 name the subscription under parent.subscription_details.
            #expect(try await Self.outcome(client, "invoice.paid", invoice("sub_1", end: now + 90 * 86_400, newAPI: true)) == "renewed")
            #expect(try await expiry("sub_1") == now + 90 * 86_400)
            // Cancelled: the license ends when the subscription did.
            #expect(try await Self.outcome(client, "customer.subscription.deleted", ["id": "sub_1", "object": "subscription", "ended_at": now - 10]) == "expired")
            #expect(try await expiry("sub_1") == now - 10)
            // A late invoice never revives it, nor does a repeated deletion move it.
            #expect(try await Self.outcome(client, "invoice.paid", invoice("sub_1", end: now + 120 * 86_400)) == "stale")
            #expect(try await Self.outcome(client, "customer.subscription.deleted", ["id": "sub_1", "object": "subscription", "ended_at": now]) == "stale")
            #expect(try await expiry("sub_1") == now - 10)

            // Subscription events before the checkout that bought it: the mint applies them.
            #expect(try await Self.outcome(client, "invoice.paid", invoice("sub_2", end: now + 40 * 86_400)) == "no_license")
            #expect(try await Self.outcome(client, "checkout.session.completed", Self.session(seed, id: "cs_sub2", paymentStatus: "paid", subscription: "sub_2")) == "minted")
            #expect(try await expiry("sub_2") == now + 40 * 86_400)
            #expect(try await Self.outcome(client, "customer.subscription.deleted", ["id": "sub_3", "object": "subscription", "ended_at": now - 5]) == "no_license")
            #expect(try await Self.outcome(client, "checkout.session.completed", Self.session(seed, id: "cs_sub3", paymentStatus: "paid", subscription: "sub_3")) == "minted")
            #expect(try await expiry("sub_3") == now - 5)
            // A refunded license is not renewed by a later invoice.
            #expect(try await Self.outcome(client, "charge.refunded", ["id": "ch_2", "payment_intent": "pi_cs_sub2"]) == "revoked")
            #expect(try await Self.outcome(client, "invoice.paid", invoice("sub_2", end: now + 70 * 86_400)) == "stale")
            #expect(try await expiry("sub_2") == now + 40 * 86_400)
            // Absurd times are treated as absent, not trusted into arithmetic.
            #expect(try await Self.outcome(client, "invoice.paid", invoice("sub_2", end: Int64.max)) == "ignored")
            #expect(try await expiry("sub_2") == now + 40 * 86_400)
        }
    }

    // MARK: 3. Tenants sharing a Stripe account; events that cannot apply yet

    @Test func oneStripeAccountFeedsTwoTenants() async throws {
        try await Harness().run { client in
            let seed = try await Stripe.configured(client)
            // A second tenant with the same product and key type ids, on the same Stripe account.
            #expect(try await client.admin(.post, "/tenants", ["id": "beta", "name": "Beta"]).status == .created)
            #expect(try await client.admin(.post, "/tenants/beta/products", ["id": "app", "name": "App", "key_prefix": "BETA", "trial_duration_days": 0, "free_tier_enabled": false]).status == .created)
            #expect(try await client.admin(.post, "/tenants/beta/products/app/key-types", [
                "id": seed.keyType, "display_name": "Pro", "activation_limit": 1, "duration_days": NSNull(), "fallback_access": false, "entitlements": ["pro"],
            ]).status == .created)
            #expect(try await client.admin(.put, "/tenants/beta/stripe", ["webhook_secret": Stripe.secret]).status == .ok)
            // The same event id reaches both endpoints: each tenant applies it once.
            let shared = Self.session(seed, id: "cs_shared", paymentStatus: "paid")
            #expect(try await Self.outcome(client, "checkout.session.completed", shared, id: "evt_shared") == "minted")
            #expect(try await Self.outcome(client, "checkout.session.completed", shared, id: "evt_shared", tenant: "beta") == "minted")
            #expect(try await Self.outcome(client, "checkout.session.completed", shared, id: "evt_shared", tenant: "beta") == "duplicate")
            let minted = try await Self.licenses(client, session: "cs_shared")
            #expect(Set(minted.map(\.tenantId)) == ["acme", "beta"])
            #expect(try await Self.outcome(client, "charge.refunded", ["id": "ch_1", "payment_intent": "pi_cs_shared"], id: "evt_refund") == "revoked")
            #expect(try await Self.outcome(client, "charge.refunded", ["id": "ch_1", "payment_intent": "pi_cs_shared"], id: "evt_refund", tenant: "beta") == "revoked")
            // A session made by one tenant's checkout names it; the other tenant ignores it.
            #expect(try await Self.outcome(client, "checkout.session.completed", Self.session(seed, id: "cs_acme_only", paymentStatus: "paid", tenant: "acme"), tenant: "beta") == "ignored")
            // Sessions Keylight did not make (no product metadata) are not its business.
            #expect(try await Self.outcome(client, "checkout.session.completed", ["id": "cs_other", "object": "checkout.session", "payment_status": "paid"]) == "ignored")
        }
    }

    @Test func anEventForAMissingKeyTypeIsRetriedUntilItApplies() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await Stripe.configured(client)
            var early = Self.session(seed, id: "cs_early", paymentStatus: "paid")
            early["metadata"] = ["product_id": "app", "key_type_id": "launch"]
            // Not 2xx, so Stripe sends it again; kept and listed meanwhile.
            let first = try await Self.send(client, "checkout.session.completed", early, id: "evt_early")
            #expect(first.status == .unprocessableContent && first["code"] as? String == "UNKNOWN_PRODUCT")
            let again = try await Self.send(client, "checkout.session.completed", early, id: "evt_early")
            #expect(again.status == .unprocessableContent)
            let listed = try #require((try await client.admin(.get, "/tenants/acme/stripe/events")["events"] as? [[String: Any]])?.first)
            #expect(listed["id"] as? String == "evt_early" && listed["attempts"] as? Int == 2 && listed["retryable"] as? Bool == true)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM stripe_events WHERE sealed_event IS NOT NULL") == 1)
            #expect(try await Self.licenses(client, session: "cs_early").isEmpty)
            // A second one, to be applied from the dashboard.
            var later = Self.session(seed, id: "cs_later", paymentStatus: "paid")
            later["metadata"] = ["product_id": "app", "key_type_id": "launch"]
            #expect(try await Self.send(client, "checkout.session.completed", later, id: "evt_later").status == .unprocessableContent)
            let (browser, _) = try await DashboardTests.signedIn(client)
            let page = try await browser.get("/dashboard/t/acme")
            #expect(page.text.contains("Stripe events not applied") && page.text.contains("evt_early") && page.text.contains("evt_later"))
            // Retrying before the key type exists changes nothing.
            #expect(try await client.admin(.post, "/tenants/acme/stripe/events/evt_later/retry")["outcome"] as? String == "unknown_product")

            #expect(try await client.admin(.post, "/tenants/acme/products/app/key-types", [
                "id": "launch", "display_name": "Launch", "activation_limit": 2, "duration_days": NSNull(), "fallback_access": false, "entitlements": ["pro"],
            ]).status == .created)
            // Stripe's next delivery applies it; later ones are duplicates.
            let applied = try await Self.send(client, "checkout.session.completed", early, id: "evt_early")
            #expect(applied.status == .ok && applied["outcome"] as? String == "minted")
            #expect(try await Self.outcome(client, "checkout.session.completed", early, id: "evt_early") == "duplicate")
            // The dashboard's Retry applies the other.
            _ = try await browser.get("/dashboard/t/acme")
            let retried = try await browser.post("/dashboard/t/acme/stripe/events/evt_later/retry")
            #expect(retried.status == .seeOther)
            #expect(try await Self.licenses(client, session: "cs_early").count == 1)
            #expect(try await Self.licenses(client, session: "cs_later").count == 1)
            // Applied events keep nothing of the buyer and leave the list.
            #expect(try await client.count("SELECT COUNT(*) AS n FROM stripe_events WHERE sealed_event IS NOT NULL") == 0)
            #expect((try await client.admin(.get, "/tenants/acme/stripe/events")["events"] as? [[String: Any]])?.isEmpty == true)
            #expect(try await client.admin(.post, "/tenants/acme/stripe/events/evt_later/retry").status == .notFound)
            #expect(try await client.admin(.get, "/tenants/acme/stripe/events?outcome=bogus").status == .badRequest)
            #expect(try await DashboardTests.auditActions(client).contains("stripe_event.retry"))
        }
    }

    // MARK: 4. The settings form keeps what it is not given

    @Test func blankStripeFieldsKeepTheStoredSecrets() async throws {
        try await Harness().run { client in
            let (browser, _) = try await DashboardTests.signedIn(client)
            _ = try await browser.get("/dashboard/t/acme")
            // Nothing stored yet: a blank webhook secret is refused (with the reason) and stores nothing.
            _ = try await browser.post("/dashboard/t/acme/stripe", [("webhook_secret", ""), ("secret_key", "sk_test_1")])
            #expect(try await browser.get("/dashboard/t/acme").text.contains("Missing field webhook_secret"))
            #expect(try await client.database.stripeSettings(tenantId: "acme") == nil)
            // The API answers a well-formed request that leaves nothing to keep with 409 CONFLICT (the
            // schema allows every field to be absent or null; what is stored decides), and stores nothing.
            for body: [String: Any] in [["secret_key": NSNull()], ["webhook_secret": NSNull(), "secret_key": NSNull()], ["secret_key": "sk_test_1"], [:]] {
                let refused = try await client.admin(.put, "/tenants/acme/stripe", body)
                #expect(refused.status == .conflict && refused["code"] as? String == "CONFLICT", "\(body)")
            }
            #expect(try await client.database.stripeSettings(tenantId: "acme") == nil)
            _ = try await browser.get("/dashboard/t/acme")
            #expect(try await browser.post("/dashboard/t/acme/stripe", [("webhook_secret", "whsec_1"), ("secret_key", "sk_test_1")]).status == .seeOther)
            let stored = try #require(try await client.database.stripeSettings(tenantId: "acme"))
            // Only the webhook secret changed: the secret key stays.
            _ = try await browser.get("/dashboard/t/acme")
            #expect(try await browser.post("/dashboard/t/acme/stripe", [("webhook_secret", "whsec_2"), ("secret_key", "")]).status == .seeOther)
            let after = try #require(try await client.database.stripeSettings(tenantId: "acme"))
            #expect(after.sealedSecretKey == stored.sealedSecretKey && after.sealedWebhookSecret != stored.sealedWebhookSecret)
            // Only the secret key changed: the webhook secret stays.
            _ = try await browser.get("/dashboard/t/acme")
            #expect(try await browser.post("/dashboard/t/acme/stripe", [("webhook_secret", ""), ("secret_key", "sk_test_2")]).status == .seeOther)
            let third = try #require(try await client.database.stripeSettings(tenantId: "acme"))
            #expect(third.sealedWebhookSecret == after.sealedWebhookSecret && third.sealedSecretKey != after.sealedSecretKey)
            // The box removes the secret key.
            let page = try await browser.get("/dashboard/t/acme")
            #expect(page.text.contains("remove_secret_key") && page.text.contains("blank keeps"))
            #expect(try await browser.post("/dashboard/t/acme/stripe", [("webhook_secret", ""), ("secret_key", ""), ("remove_secret_key", "on")]).status == .seeOther)
            #expect(try await client.database.stripeSettings(tenantId: "acme")?.sealedSecretKey == nil)
            #expect(try await client.database.stripeSettings(tenantId: "acme")?.sealedWebhookSecret == after.sealedWebhookSecret)
        }
    }

    // MARK: 6. The buyer's success page

    @Test func theSuccessPagePicksTheKeyUpOnceWithinADay() async throws {
        try await Harness().run { client in
            let seed = try await Stripe.configured(client)
            // Not known yet: 404; known from checkout creation but not paid yet: 202.
            #expect(try await Self.pickUp(client, "cs_first").status == .notFound)
            try await client.database.recordCheckoutSession(tenantId: "acme", id: "cs_first", successOrigin: "https://shop.example", now: client.clock.unixSeconds)
            let pending = try await Self.pickUp(client, "cs_first")
            #expect(pending.status == .accepted && pending["status"] as? String == "pending")
            #expect(try await Self.outcome(client, "checkout.session.completed", Self.session(seed, id: "cs_first", paymentStatus: "paid")) == "minted")
            let minted = try #require(try await Self.licenses(client, session: "cs_first").first)

            // HEAD does not spend the one pick-up.
            #expect(try await client.request(.head, "/api/acme/checkout/cs_first/license").status == .methodNotAllowed)
            // The first pick-up gets the key (readable by the success page's origin, never cached).
            let first = try await Self.pickUp(client, "cs_first", origin: "https://shop.example")
            #expect(first.status == .ok)
            let key = try #require(first["license_key"] as? String)
            #expect(try LicenseKey(key).keyHash == minted.keyHash)
            #expect(first["license_id"] as? String == minted.id && first["customer_email"] as? String == "cs_first@shop.example")
            #expect(first.headers[.accessControlAllowOrigin] == "https://shop.example")
            #expect(first.headers[.cacheControl] == "no-store" && first.headers[.init("Referrer-Policy")!] == "no-referrer")
            // Once: the second gets 410, and the key is no longer stored anywhere.
            let second = try await Self.pickUp(client, "cs_first", origin: "https://shop.example")
            #expect(second.status == .gone && second["code"] as? String == "GONE" && second["license_key"] == nil)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM checkout_sessions WHERE sealed_license_key IS NOT NULL") == 0)
            // Another origin may not read the answer.
            #expect(try await Self.pickUp(client, "cs_first", origin: "https://evil.example").headers[.accessControlAllowOrigin] == nil)
            // Other tenants' and malformed ids are simply unknown.
            #expect(try await Self.pickUp(client, "cs_first", tenant: "beta").status == .notFound)
            #expect(try await Self.pickUp(client, "cs_%27%20OR%201%3D1").status == .notFound)
            #expect(try await Self.pickUp(client, String(repeating: "c", count: 300)).status == .notFound)

            // Within 24 hours only; the purge drops uncollected keys after that.
            #expect(try await Self.outcome(client, "checkout.session.completed", Self.session(seed, id: "cs_late", paymentStatus: "paid")) == "minted")
            client.clock.advance(by: 86_401)
            #expect(try await Self.pickUp(client, "cs_late").status == .gone)
            #expect(try await client.database.purgeUncollectedCheckoutKeys(mintedBefore: client.clock.unixSeconds - 86_400) == 1)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM checkout_sessions WHERE sealed_license_key IS NOT NULL") == 0)
        }
    }

    @Test(arguments: StorageBackend.available)
    func concurrentPickUpsGetTheKeyOnce(backend: StorageBackend) async throws {
        try await backend.with { db in
            try await StorageConformanceTests.catalog(db)
            let sealer = SecretSealer.ephemeral()
            let event = try JSONDecoder().decode(StripeEvent.self, from: Data("""
                {"id":"evt_race","type":"checkout.session.completed","data":{"object":{"id":"cs_race","payment_status":"paid",
                 "metadata":{"product_id":"app","key_type_id":"pro"}}}}
                """.utf8))
            #expect(try await StripeEventProcessor(database: db, sealer: sealer).apply(event, tenantId: "acme", now: StorageConformanceTests.now, sealEvent: { nil }) == .minted)
            let results = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        if case .license = try await db.pickUpCheckoutLicense(tenantId: "acme", sessionId: "cs_race", now: StorageConformanceTests.now, window: 86_400, open: { $0 }) { return true }
                        return false
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(results.filter { $0 }.count == 1)
            // And concurrent deliveries of async success after completed mint one license.
            let twice = try await withThrowingTaskGroup(of: StripeOutcome.self) { group in
                for index in 0..<4 {
                    group.addTask {
                        let again = try JSONDecoder().decode(StripeEvent.self, from: Data("""
                            {"id":"evt_race_\(index)","type":"checkout.session.async_payment_succeeded","data":{"object":{"id":"cs_race2","payment_status":"paid",
                             "metadata":{"product_id":"app","key_type_id":"pro"}}}}
                            """.utf8))
                        return try await StripeEventProcessor(database: db, sealer: sealer).apply(again, tenantId: "acme", now: StorageConformanceTests.now, sealEvent: { nil })
                    }
                }
                return try await group.reduce(into: [StripeOutcome]()) { $0.append($1) }
            }
            #expect(twice.filter { $0 == .minted }.count == 1 && twice.filter { $0 == .alreadyMinted }.count == 3)
            // A purchase and its first invoice processed at the same moment: whichever goes first,
            // the license ends up paid through the invoice's period.
            for round in 0..<6 {
                let paidThrough = StorageConformanceTests.now + 365 * 86_400
                let events = try [
                    #"{"id":"evt_mint_\#(round)","type":"checkout.session.completed","data":{"object":{"id":"cs_sub_\#(round)","payment_status":"paid","subscription":"sub_r\#(round)","metadata":{"product_id":"app","key_type_id":"pro"}}}}"#,
                    #"{"id":"evt_inv_\#(round)","type":"invoice.paid","data":{"object":{"id":"in_\#(round)","subscription":"sub_r\#(round)","period_end":\#(paidThrough)}}}"#,
                ].map { try JSONDecoder().decode(StripeEvent.self, from: Data($0.utf8)) }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for event in (round.isMultiple(of: 2) ? events : events.reversed()) {
                        group.addTask { _ = try await StripeEventProcessor(database: db, sealer: sealer).apply(event, tenantId: "acme", now: StorageConformanceTests.now, sealEvent: { nil }) }
                    }
                    try await group.waitForAll()
                }
                let expiry = try await db.sql.raw("SELECT expires_at FROM licenses WHERE stripe_subscription_id = \(bind: "sub_r\(round)")")
                    .first(decodingColumn: "expires_at", as: Int64?.self) ?? nil
                #expect(expiry == paidThrough, "round \(round)")
            }
        }
    }
}
