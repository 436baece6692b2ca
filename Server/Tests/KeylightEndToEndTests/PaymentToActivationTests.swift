import Foundation
import Keylight
import KeylightCore
import KeylightSigning
import KeylightServerTestSupport
import Testing

/// Issue 7's whole path over real sockets: a checkout through (a local server speaking)
/// Stripe's API, the payment's signed webhook, the minted license reaching the developer's own
/// receiver as a signed `license.created`, and the app activating with the key it carried.
@MainActor
@Suite(.serialized, .timeLimit(.minutes(6))) struct PaymentToActivationTests {
    static let stripeWebhookSecret = "whsec_e2e_stripe"

    @Test func paymentMintsALicenseThatReachesTheReceiverAndActivates() async throws {
        let stripe = try await RecordingServer { request, _ in
            guard request.path == "/v1/checkout/sessions" else { return .init(404, #"{"error":{"message":"Unrecognized request URL"}}"#) }
            return .init(200, #"{"id":"cs_test_e2e","object":"checkout.session","url":"https://checkout.stripe.com/c/pay/cs_test_e2e"}"#)
        }
        let receiver = try await RecordingServer()
        let server = try LiveServer()
        try await server.start { configuration in
            configuration.stripeAPIBaseURL = stripe.url
            configuration.webhookPollInterval = .milliseconds(100)
        }

        // The developer's set-up: catalog, Stripe secrets, a price on the key type, a checkout key, a webhook endpoint.
        let seed = try await server.seed()
        #expect(try await server.call("PUT", "/admin/v1/tenants/acme/stripe", ["webhook_secret": Self.stripeWebhookSecret, "secret_key": "sk_test_e2e"], bearer: LiveServer.adminToken).status == 200)
        #expect(try await server.admin("PATCH", "/tenants/acme/products/app/key-types/pro", ["stripe_price_id": "price_e2e"])["stripe_price_id"] as? String == "price_e2e")
        let checkoutKey = try #require(try await server.admin("POST", "/tenants/acme/checkout-key")["checkout_key"] as? String)
        let endpoint = try await server.admin("POST", "/tenants/acme/webhooks", ["url": receiver.url + "/keylight-events", "events": ["license.created"]])
        let endpointSecret = try #require(endpoint["secret"] as? String)

        // The developer's web site starts a checkout.
        let checkout = try await server.call("POST", "/api/acme/checkout", [
            "product_id": "app", "key_type_id": "pro", "customer_email": "Buyer@Example.com",
            "success_url": "https://shop.example/thanks?session={CHECKOUT_SESSION_ID}", "cancel_url": "https://shop.example/cart",
        ], bearer: checkoutKey)
        #expect(checkout.status == 200)
        #expect(checkout.json["url"] as? String == "https://checkout.stripe.com/c/pay/cs_test_e2e")
        let sent = try #require(stripe.requests.first)
        #expect(sent.headers["authorization"] == "Bearer sk_test_e2e")
        let form = Dictionary(uniqueKeysWithValues: formPairs(sent.text))
        #expect(form["line_items[0][price]"] == "price_e2e" && form["mode"] == "payment")

        // The customer pays; Stripe tells the server, signing with the tenant's webhook secret.
        let event = try JSONSerialization.data(withJSONObject: [
            "id": "evt_e2e_paid", "object": "event", "type": "checkout.session.completed",
            "data": ["object": [
                "id": "cs_test_e2e", "object": "checkout.session", "customer": "cus_e2e", "payment_intent": "pi_e2e",
                "payment_status": "paid", "success_url": form["success_url"] ?? "",
                "customer_details": ["email": form["customer_email"] ?? ""],
                "metadata": [
                    "tenant_id": form["metadata[tenant_id]"] ?? "",
                    "product_id": form["metadata[product_id]"] ?? "", "key_type_id": form["metadata[key_type_id]"] ?? "",
                ],
            ]],
        ])
        let now = Int64(Date().timeIntervalSince1970)
        let paid = try await server.call("POST", "/stripe/webhook/acme", raw: event, headers: [
            "Stripe-Signature": WebhookSignature.header(timestamp: now, body: Array(event), secret: Self.stripeWebhookSecret),
        ])
        #expect(paid.status == 200 && paid.json["outcome"] as? String == "minted")

        // The server's delivery service posts license.created to the developer's receiver.
        var delivered: RecordingServer.Recorded?
        for _ in 0..<100 where delivered == nil {
            delivered = receiver.requests.first
            if delivered == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        let request = try #require(delivered, "no webhook within 10 s")
        let signature = try #require(request.headers["keylight-signature"])
        #expect(WebhookSignature.isValid(header: signature, body: request.body, secret: endpointSecret, now: Int64(Date().timeIntervalSince1970)))
        #expect(request.json["type"] as? String == "license.created")
        let data = try #require(request.json["data"] as? [String: Any])
        let licenseKey = try #require(data["license_key"] as? String)
        #expect((data["license"] as? [String: Any])?["customer_email"] as? String == "buyer@example.com")

        // Stripe sends the buyer to the success page, which picks the same key up, once.
        #expect(form["success_url"] == "https://shop.example/thanks?session={CHECKOUT_SESSION_ID}")
        let pickup = try await server.call("GET", "/api/acme/checkout/cs_test_e2e/license", nil, headers: ["Origin": "https://shop.example"])
        #expect(pickup.status == 200 && pickup.json["license_key"] as? String == licenseKey)
        #expect(pickup.headers["access-control-allow-origin"] == "https://shop.example")
        #expect(try await server.call("GET", "/api/acme/checkout/cs_test_e2e/license", nil).status == 410)

        // The customer pastes the key from the developer's email into the app.
        let manager = EndToEndTests.manager(server, sdkKey: seed.sdkKey, store: EndToEndTests.store(), trusted: try await server.keyset())
        await manager.checkOnLaunch()
        try await manager.activate(key: licenseKey)
        #expect(manager.state == .licensed)
        #expect(Set(manager.entitlements) == ["export", "pro"])
        // Exactly one delivery, answered 200 at its first attempt, as the server recorded it.
        let endpointId = try #require(endpoint["id"] as? String)
        var rows: [[String: Any]] = []
        #expect(try await eventually {
            rows = try await server.admin("GET", "/tenants/acme/webhooks/\(endpointId)/deliveries")["deliveries"] as? [[String: Any]] ?? []
            return rows.first?["status"] as? String == "delivered"
        })
        #expect(rows.count == 1 && rows.first?["attempts"] as? Int == 1 && rows.first?["last_status_code"] as? Int == 200, "\(rows)")
        #expect(receiver.statuses == [200])

        await server.stop()
        await receiver.stop()
        await stripe.stop()
    }

    private func formPairs(_ body: String) -> [(String, String)] {
        body.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
    }
}
