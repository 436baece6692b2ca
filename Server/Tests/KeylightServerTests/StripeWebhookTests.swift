import Foundation
import HTTPTypes
import KeylightCore
import KeylightSigning
@testable import KeylightServer
import Testing

/// Protocol section 5 with signed fixtures, as Stripe would send them.
@Suite(.timeLimit(.minutes(6))) struct StripeWebhookTests {
    static let secret = "whsec_test_secret"

    static func event(_ type: String, _ object: [String: Any], id: String = "evt_\(UUID().uuidString.prefix(12))") -> String {
        let json = try! JSONSerialization.data(withJSONObject: ["id": id, "object": "event", "type": type, "data": ["object": object]], options: [.sortedKeys])
        return String(decoding: json, as: UTF8.self)
    }

    static func signature(_ body: String, at time: Int64, secret: String = secret) -> String {
        "t=\(time),v1=\(Hex.encode(WebhookSignature.sign(timestamp: time, body: Array(body.utf8), secret: secret)))"
    }

    static func deliver(_ client: Client, _ body: String, signature: String?) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let signature { headers[.init("Stripe-Signature")!] = signature }
        return try await client.request(.post, "/stripe/webhook/acme", headers: headers, body: body)
    }

    static func checkout(_ seed: Seed, email: String = "buyer@shop.example", paymentIntent: String = "pi_1", subscription: String? = "sub_1") -> [String: Any] {
        var object: [String: Any] = [
            "id": "cs_\(paymentIntent)", "object": "checkout.session", "customer": "cus_1", "payment_intent": paymentIntent, "payment_status": "paid",
            "customer_details": ["email": email], "metadata": ["product_id": "app", "key_type_id": seed.keyType],
        ]
        if let subscription { object["subscription"] = subscription }
        return object
    }

    static func configured(_ client: Client, fallback: Bool = false) async throws -> Seed {
        let seed = try await client.seed(fallback: fallback)
        #expect(try await client.admin(.put, "/tenants/acme/stripe", ["webhook_secret": secret]).status == .ok)
        return seed
    }

    static func stripeLicenses(_ client: Client) async throws -> [License] {
        try await client.database.sql.raw("SELECT \(Database.licenseColumns) FROM licenses WHERE stripe_customer_id IS NOT NULL").all(decoding: License.self)
    }

    @Test func checkoutMintsOneLicenseAndRepeatsChangeNothing() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await Self.configured(client)
            let body = Self.event("checkout.session.completed", Self.checkout(seed), id: "evt_checkout_1")
            let first = try await Self.deliver(client, body, signature: Self.signature(body, at: harness.clock.unixSeconds))
            #expect(first.status == .ok, "\(first.text)")
            #expect(first["outcome"] as? String == "minted")
            let minted = try await Self.stripeLicenses(client)
            #expect(minted.count == 1)
            #expect(minted[0].customerEmail == "buyer@shop.example" && minted[0].keyTypeId == seed.keyType && minted[0].status == .active)
            #expect(minted[0].maskedKey.hasPrefix("ACME-"))  // the product's key prefix
            let ids = try #require(try await client.database.sql.raw("SELECT stripe_payment_intent_id AS p, stripe_subscription_id AS s FROM licenses WHERE id = \(bind: minted[0].id)").first())
            #expect(try ids.decode(column: "p", as: String.self) == "pi_1")
            #expect(try ids.decode(column: "s", as: String.self) == "sub_1")
            let again = try await Self.deliver(client, body, signature: Self.signature(body, at: harness.clock.unixSeconds))
            #expect(again.status == .ok)
            #expect(again["outcome"] as? String == "duplicate")
            #expect(try await Self.stripeLicenses(client).count == 1)
            let audit = try await client.admin(.get, "/audit-log")
            #expect(((audit["entries"] as? [[String: Any]]) ?? []).contains { $0["actor"] as? String == "stripe" && $0["action"] as? String == "license.create" })
        }
    }

    @Test func badStaleOrMissingSignaturesAre400AndChangeNothing() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await Self.configured(client)
            let body = Self.event("checkout.session.completed", Self.checkout(seed))
            let now = harness.clock.unixSeconds
            let tampered = body.replacingOccurrences(of: "buyer@shop.example", with: "thief@shop.example")
            for (payload, signature) in [
                (body, Self.signature(body, at: now, secret: "whsec_wrong")),
                (body, Self.signature(body, at: now - 301)),
                (body, Self.signature(body, at: now + 301)),
                (tampered, Self.signature(body, at: now)),
                (body, "t=\(now)"),
                (body, "garbage"),
            ] as [(String, String)] {
                let reply = try await Self.deliver(client, payload, signature: signature)
                #expect(reply.status == .badRequest, "\(signature)")
            }
            #expect(try await Self.deliver(client, body, signature: nil).status == .badRequest)
            #expect(try await Self.stripeLicenses(client).isEmpty)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM stripe_events") == 0)
            // Within tolerance, and any one of several v1 values may match (secret rotation).
            let several = "t=\(now - 299),v1=\(String(repeating: "ab", count: 32)),v1=\(Hex.encode(WebhookSignature.sign(timestamp: now - 299, body: Array(body.utf8), secret: Self.secret)))"
            #expect(try await Self.deliver(client, body, signature: several).status == .ok)
            // A correctly signed body that is not an event is malformed.
            let junk = #"{"hello":"world"}"#
            #expect(try await Self.deliver(client, junk, signature: Self.signature(junk, at: now)).status == .badRequest)
            // Unknown tenants, or tenants without Stripe, have no endpoint.
            let other = try await client.request(.post, "/stripe/webhook/nobody", headers: [.init("Stripe-Signature")!: Self.signature(body, at: now)], body: body)
            #expect(other.status == .notFound)
        }
    }

    @Test func refundsDisputesCancellationsAndRenewals() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await Self.configured(client, fallback: true)
            let now = harness.clock.unixSeconds
            func send(_ type: String, _ object: [String: Any]) async throws -> String? {
                let body = Self.event(type, object)
                return try await Self.deliver(client, body, signature: Self.signature(body, at: now))["outcome"] as? String
            }
            #expect(try await send("checkout.session.completed", Self.checkout(seed, paymentIntent: "pi_a", subscription: "sub_a")) == "minted")
            #expect(try await send("checkout.session.completed", Self.checkout(seed, paymentIntent: "pi_b", subscription: nil)) == "minted")
            #expect(try await Self.stripeLicenses(client).count == 2)

            #expect(try await send("invoice.paid", ["id": "in_1", "subscription": "sub_a", "lines": ["data": [["period": ["end": now + 30 * 86_400]]]]]) == "renewed")
            let renewed = try await client.database.sql.raw("SELECT expires_at FROM licenses WHERE stripe_subscription_id = 'sub_a'").first(decodingColumn: "expires_at", as: Int64.self)
            #expect(renewed == now + 30 * 86_400)

            #expect(try await send("customer.subscription.deleted", ["id": "sub_a", "object": "subscription"]) == "expired")
            let ended = try await client.database.sql.raw("SELECT expires_at FROM licenses WHERE stripe_subscription_id = 'sub_a'").first(decodingColumn: "expires_at", as: Int64.self)
            #expect(ended == now)

            #expect(try await send("charge.refunded", ["id": "ch_1", "payment_intent": "pi_b"]) == "revoked")
            #expect(try await client.database.sql.raw("SELECT status FROM licenses WHERE stripe_payment_intent_id = 'pi_b'").first(decodingColumn: "status", as: String.self) == "revoked")
            #expect(try await send("charge.dispute.created", ["id": "dp_1", "payment_intent": "pi_a"]) == "revoked")
            #expect(try await send("charge.refunded", ["id": "ch_2", "payment_intent": "pi_unknown"]) == "no_license")
            #expect(try await send("customer.created", ["id": "cus_9"]) == "ignored")
            #expect(try await Self.stripeLicenses(client).count == 2)
        }
    }
}
