import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import KeylightServerTestSupport
import Testing

/// `POST /api/{tenantId}/checkout` against a local server that speaks Stripe's wire format.
@Suite(.timeLimit(.minutes(6))) struct CheckoutTests {
    static let session = #"{"id":"cs_test_1","object":"checkout.session","url":"https://checkout.stripe.com/c/pay/cs_test_1"}"#

    /// A harness pointed at `stripe`, with Stripe configured, a priced key type and a checkout key.
    static func configured(_ client: Client, mode: String? = nil) async throws -> (seed: Seed, checkoutKey: String) {
        let seed = try await client.seed()
        #expect(try await client.admin(.put, "/tenants/acme/stripe", ["webhook_secret": "whsec_1", "secret_key": "sk_test_abc"]).status == .ok)
        var patch: [String: Any] = ["stripe_price_id": "price_123"]
        if let mode { patch["stripe_mode"] = mode }
        let keyType = try await client.admin(.patch, "/tenants/acme/products/app/key-types/\(seed.keyType)", patch)
        #expect(keyType.status == .ok && keyType["stripe_price_id"] as? String == "price_123", "\(keyType.text)")
        let key = try await client.admin(.post, "/tenants/acme/checkout-key")
        #expect(key.status == .created)
        return (seed, try #require(key["checkout_key"] as? String))
    }

    static func checkout(_ client: Client, key: String?, _ body: [String: Any], tenant: String = "acme", idempotencyKey: String? = nil) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let key { headers[.authorization] = "Bearer \(key)" }
        if let idempotencyKey { headers[.init("Idempotency-Key")!] = idempotencyKey }
        let text = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        return try await client.request(.post, "/api/\(tenant)/checkout", headers: headers, body: text)
    }

    static func body(_ seed: Seed, email: String? = "Buyer@Example.com") -> [String: Any] {
        var body: [String: Any] = [
            "product_id": "app", "key_type_id": seed.keyType,
            "success_url": "https://shop.example/thanks?session={CHECKOUT_SESSION_ID}", "cancel_url": "https://shop.example/cart",
        ]
        if let email { body["customer_email"] = email }
        return body
    }

    static func form(_ request: RecordingServer.Recorded) -> [String: String] {
        Dictionary(FormEncoding.decode(request.text), uniquingKeysWith: { $1 })
    }

    /// Runs `body` against a server whose Stripe API is a local recording server answering `answer`.
    static func withStripe(
        answer: @escaping @Sendable (RecordingServer.Recorded, Int) -> RecordingServer.Answer = { _, _ in .init(200, session) },
        publicURL: String? = nil,
        _ body: @escaping @Sendable (Client, RecordingServer) async throws -> Void
    ) async throws {
        let stripe = try await RecordingServer(respond: answer)
        var harness = Harness()
        harness.configuration.stripeAPIBaseURL = stripe.url
        harness.configuration.publicURL = publicURL
        do {
            try await harness.run { client in try await body(client, stripe) }
        } catch {
            await stripe.stop()
            throw error
        }
        await stripe.stop()
    }

    @Test func createsASessionThroughStripesAPI() async throws {
        try await Self.withStripe { client, stripe in
            let (seed, key) = try await Self.configured(client)
            let reply = try await Self.checkout(client, key: key, Self.body(seed))
            #expect(reply.status == .ok, "\(reply.text)")
            #expect(reply["url"] as? String == "https://checkout.stripe.com/c/pay/cs_test_1")
            #expect(reply["session_id"] as? String == "cs_test_1")

            let sent = try #require(stripe.requests.first)
            #expect(sent.path == "/v1/checkout/sessions" && sent.method == "POST")
            #expect(sent.headers["authorization"] == "Bearer sk_test_abc")
            #expect(sent.headers["content-type"] == "application/x-www-form-urlencoded")
            #expect(sent.headers["idempotency-key"]?.hasPrefix("keylight_") == true)
            #expect(sent.text.contains("metadata%5Bproduct_id%5D=app"))  // brackets and the URL's own ?={} are escaped
            let form = Self.form(sent)
            #expect(form["mode"] == "payment")
            #expect(form["line_items[0][price]"] == "price_123" && form["line_items[0][quantity]"] == "1")
            #expect(form["success_url"] == "https://shop.example/thanks?session={CHECKOUT_SESSION_ID}")
            #expect(form["cancel_url"] == "https://shop.example/cart")
            #expect(form["customer_email"] == "buyer@example.com")
            #expect(form["metadata[product_id]"] == "app" && form["metadata[key_type_id]"] == seed.keyType && form["metadata[tenant_id]"] == "acme")
            #expect(form["subscription_data[metadata][product_id]"] == nil)

            // No email: Stripe asks the customer.
            #expect(try await Self.checkout(client, key: key, Self.body(seed, email: nil)).status == .ok)
            #expect(Self.form(stripe.requests[1])["customer_email"] == nil)
            #expect(stripe.requests[1].headers["idempotency-key"] != sent.headers["idempotency-key"])

            // A client's own Idempotency-Key is forwarded (scoped to the tenant), so its retry is one session.
            _ = try await Self.checkout(client, key: key, Self.body(seed), idempotencyKey: "order-42")
            _ = try await Self.checkout(client, key: key, Self.body(seed), idempotencyKey: "order-42")
            #expect(stripe.requests[2].headers["idempotency-key"] == stripe.requests[3].headers["idempotency-key"])
            #expect(stripe.requests[2].headers["idempotency-key"]?.contains("order-42") == false)
        }
    }

    @Test func subscriptionsCarryTheMetadataOntoTheSubscription() async throws {
        try await Self.withStripe { client, stripe in
            let (seed, key) = try await Self.configured(client, mode: "subscription")
            #expect(try await Self.checkout(client, key: key, Self.body(seed)).status == .ok)
            let form = Self.form(try #require(stripe.requests.first))
            #expect(form["mode"] == "subscription")
            #expect(form["subscription_data[metadata][key_type_id]"] == seed.keyType)
        }
    }

    @Test func onlyTheTenantsCurrentCheckoutKeyIsAccepted() async throws {
        try await Self.withStripe { client, stripe in
            let (seed, key) = try await Self.configured(client)
            for candidate in [nil, "", "wrong", key + "x", Harness.adminToken, seed.sdkKey] as [String?] {
                let reply = try await Self.checkout(client, key: candidate, Self.body(seed))
                #expect(reply.status == .unauthorized && reply.code == "UNAUTHORIZED", "\(candidate ?? "nil")")
            }
            #expect(try await Self.checkout(client, key: key, Self.body(seed), tenant: "other").status == .unauthorized)
            let rotated = try #require(try await client.admin(.post, "/tenants/acme/checkout-key")["checkout_key"] as? String)
            #expect(rotated != key)
            #expect(try await Self.checkout(client, key: key, Self.body(seed)).status == .unauthorized)
            #expect(try await Self.checkout(client, key: rotated, Self.body(seed)).status == .ok)
            #expect(stripe.requests.count == 1)
            #expect(try await client.database.auditLog(limit: 20).filter { $0.action == "checkout_key.rotate" }.count == 2)
            #expect(try await client.admin(.post, "/tenants/nobody/checkout-key").status == .notFound)
        }
    }

    @Test func badRequestsNeverReachStripe() async throws {
        try await Self.withStripe { client, stripe in
            let (seed, key) = try await Self.configured(client)
            let good = Self.body(seed)
            func with(_ field: String, _ value: Any?) -> [String: Any] {
                var body = good
                body[field] = value
                return body
            }
            for (body, status) in [
                (with("product_id", nil), HTTPResponse.Status.badRequest),
                (with("key_type_id", "Not An Id"), .badRequest),
                (with("success_url", "/relative"), .badRequest),
                (with("cancel_url", "javascript:alert(1)"), .badRequest),
                (with("success_url", "https://" + String(repeating: "a", count: 2_100)), .badRequest),
                (with("customer_email", "not-an-email"), .badRequest),
                (with("product_id", "ghost"), .notFound),
                (with("key_type_id", "ghost"), .notFound),
            ] as [([String: Any], HTTPResponse.Status)] {
                let reply = try await Self.checkout(client, key: key, body)
                #expect(reply.status == status, "\(body): \(reply.text)")
            }
            #expect(try await Self.checkout(client, key: key, good, idempotencyKey: String(repeating: "k", count: 300)).status == .badRequest)
            // A key type without a price cannot be sold; a tenant without a Stripe secret key cannot sell.
            _ = try await client.admin(.patch, "/tenants/acme/products/app/key-types/\(seed.keyType)", ["stripe_price_id": NSNull()])
            let unpriced = try await Self.checkout(client, key: key, good)
            #expect(unpriced.status == .conflict && unpriced.text.contains("stripe_price_id"))
            _ = try await client.admin(.patch, "/tenants/acme/products/app/key-types/\(seed.keyType)", ["stripe_price_id": "price_123"])
            // Only an explicit null removes the secret key (a settings change that omits it keeps it).
            #expect(try await client.admin(.put, "/tenants/acme/stripe", ["webhook_secret": "whsec_1"]).status == .ok)
            #expect(try await client.database.stripeSettings(tenantId: "acme")?.sealedSecretKey != nil)
            #expect(try await client.admin(.put, "/tenants/acme/stripe", ["secret_key": NSNull()]).status == .ok)
            #expect(try await Self.checkout(client, key: key, good).status == .conflict)
            #expect(stripe.requests.isEmpty)
            // Price ids are checked when set.
            for bad in ["prod_123", "price_ 1", ""] {
                #expect(try await client.admin(.patch, "/tenants/acme/products/app/key-types/\(seed.keyType)", ["stripe_price_id": bad]).status == .badRequest)
            }
            #expect(try await client.admin(.patch, "/tenants/acme/products/app/key-types/\(seed.keyType)", ["stripe_mode": "barter"]).status == .badRequest)
            #expect(try await client.admin(.patch, "/tenants/acme/products/app/key-types/\(seed.keyType)", ["display_name": "x"]).status == .badRequest)
            #expect(try await client.admin(.patch, "/tenants/acme/products/app/key-types/ghost", ["stripe_price_id": "price_1"]).status == .notFound)
        }
    }

    @Test func stripeFailuresAre502WithStripesReason() async throws {
        try await Self.withStripe(answer: { request, _ in
            if request.text.contains("price_gone") { return .init(400, #"{"error":{"type":"invalid_request_error","message":"No such price: 'price_gone'"}}"#) }
            return .init(500, #"{"error":{"message":"Something went wrong on Stripe's end."}}"#)
        }) { client, stripe in
            let (seed, key) = try await Self.configured(client)
            let failing = try await Self.checkout(client, key: key, Self.body(seed))
            #expect(failing.status == .badGateway && failing.code == "STRIPE_ERROR")
            // A 5xx is retried once, with the same idempotency key.
            #expect(stripe.requests.count == 2)
            #expect(stripe.requests[0].headers["idempotency-key"] == stripe.requests[1].headers["idempotency-key"])
            _ = try await client.admin(.patch, "/tenants/acme/products/app/key-types/\(seed.keyType)", ["stripe_price_id": "price_gone"])
            let refused = try await Self.checkout(client, key: key, Self.body(seed))
            #expect(refused.status == .badGateway && refused.text.contains("No such price"))
            #expect(stripe.requests.count == 3)  // a 4xx is not retried
        }
        // Stripe unreachable.
        var offline = Harness()
        offline.configuration.stripeAPIBaseURL = "http://127.0.0.1:9"
        offline.configuration.stripeRequestTimeout = .seconds(1)
        try await offline.run { client in
            let (seed, key) = try await Self.configured(client)
            let reply = try await Self.checkout(client, key: key, Self.body(seed))
            #expect(reply.status == .badGateway && reply.text.contains("could not be reached"))
        }
    }
}
