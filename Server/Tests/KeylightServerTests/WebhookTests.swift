// Longer than 300 lines: each test drives a whole delivery cycle (live receivers, retries,
// restarts) with shared fixtures; split by topic, every file would repeat the set-up.

import Crypto
import Foundation
import HTTPTypes
import KeylightCore
import KeylightSigning
@testable import KeylightServer
import KeylightServerTestSupport
import NIOConcurrencyHelpers
import SQLKit
import Testing

/// Outbound webhooks: registration, one outbox row per event written with its change, signed
/// deliveries to live receivers, retries, 410, restarts.
@Suite(.timeLimit(.minutes(6))) struct WebhookTests {
    /// Registers an endpoint; answers its id and signing secret.
    static func register(_ client: Client, url: String, events: [String]? = nil) async throws -> (id: String, secret: String) {
        var body: [String: Any] = ["url": url]
        if let events { body["events"] = events }
        let reply = try await client.admin(.post, "/tenants/acme/webhooks", body)
        #expect(reply.status == .created, "\(reply.text)")
        return (try #require(reply["id"] as? String), try #require(reply["secret"] as? String))
    }

    /// Every event recorded in the outbox so far, oldest first, payloads opened.
    static func outbox(_ client: Client) async throws -> [[String: Any]] {
        let rows = try await client.database.sql.raw("SELECT \(Database.deliveryColumns) FROM webhook_deliveries ORDER BY created_at, event_id")
            .all(decoding: WebhookDelivery.self)
        return try rows.map { row in
            let sealed = try #require(row.sealedPayload)
            let payload = try client.server.webhooks.sealer.open(sealed, context: WebhookOutbox.payloadContext(eventId: row.eventId))
            var json = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
            json["_delivery_id"] = row.id
            return json
        }
    }

    static func delivery(_ client: Client, id: String? = nil) async throws -> WebhookDelivery {
        var query: SQLQueryString = "SELECT \(Database.deliveryColumns) FROM webhook_deliveries"
        if let id { query += " WHERE id = \(bind: id)" }
        return try #require(try await client.database.sql.raw(query).first(decoding: WebhookDelivery.self))
    }

    @Test func endpointsAreRegisteredValidatedListedAndRemoved() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            let (id, secret) = try await Self.register(client, url: "https://hooks.example.com/keylight")
            #expect(secret.hasPrefix("whsec_") && secret.count > 40)
            client.clock.advance(by: 1)  // listings are in creation order
            let subset = try await Self.register(client, url: "http://127.0.0.1:9/hook", events: ["license.created", "license.created", "instance.activated"])

            let list = try await client.admin(.get, "/tenants/acme/webhooks")
            let endpoints = try #require(list["endpoints"] as? [[String: Any]])
            #expect(endpoints.count == 2)
            #expect(!list.text.contains(secret) && !list.text.contains("sealed"))  // the secret is shown once
            #expect(endpoints[0]["events"] as? [String] == WebhookEventType.allCases.map(\.rawValue))
            #expect(endpoints[1]["events"] as? [String] == ["license.created", "instance.activated"])

            for (body, fragment) in [
                (["url": "http://hooks.example.com/x"], "https"),
                (["url": "ftp://127.0.0.1/x"], "https"),
                (["url": "https://user:pw@hooks.example.com/x"], "https"),
                (["url": "not a url"], "https"),
                (["url": "https://" + String(repeating: "a", count: 2_100) + ".com"], "longer"),
                (["url": "https://hooks.example.com", "events": ["license.stolen"]], "Unknown event type"),
                (["url": "https://hooks.example.com", "events": []], "events"),
                ([:], "url"),
            ] as [([String: Any], String)] {
                let reply = try await client.admin(.post, "/tenants/acme/webhooks", body)
                #expect(reply.status == .badRequest && reply.code == "INVALID_REQUEST", "\(body)")
                #expect(reply.text.contains(fragment), "\(reply.text)")
            }
            #expect(try await client.admin(.post, "/tenants/nobody/webhooks", ["url": "https://a.example"]).status == .notFound)
            #expect(try await client.admin(.post, "/tenants/acme/webhooks", ["url": "https://a.example"], token: "wrong").status == .unauthorized)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM webhook_endpoints") == 2)

            let disabled = try await client.admin(.patch, "/tenants/acme/webhooks/\(subset.id)", ["enabled": false])
            #expect(disabled.status == .ok && disabled["enabled"] as? Bool == false)
            #expect((disabled["disabled_reason"] as? String)?.contains("admin-token") == true)
            #expect(try await client.admin(.patch, "/tenants/acme/webhooks/\(subset.id)", [:]).status == .badRequest)

            #expect(try await client.admin(.delete, "/tenants/acme/webhooks/\(id)").status == .noContent)
            #expect(try await client.admin(.delete, "/tenants/acme/webhooks/\(id)").status == .notFound)
            #expect(try await client.admin(.get, "/tenants/acme/webhooks/\(id)/deliveries").status == .notFound)
            let actions = try await client.database.auditLog(limit: 50).map(\.action)
            #expect(actions.filter { $0 == "webhook_endpoint.create" }.count == 2)
            #expect(actions.contains("webhook_endpoint.disable") && actions.contains("webhook_endpoint.delete"))
        }
    }

    @Test func atMostTwentyEndpointsPerTenant() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            for index in 0..<AdminService.maxEndpointsPerTenant {
                _ = try await Self.register(client, url: "https://hooks.example.com/\(index)")
            }
            let reply = try await client.admin(.post, "/tenants/acme/webhooks", ["url": "https://hooks.example.com/21"])
            #expect(reply.status == .conflict)
        }
    }

    @Test func everyChangeRecordsItsEventInTheSameTransaction() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await StripeWebhookTests.configured(client)
            let all = try await Self.register(client, url: "https://hooks.example.com/all")
            _ = try await Self.register(client, url: "https://hooks.example.com/created", events: ["license.created"])
            // One second per step, so the outbox's creation times give the order.
            func step<T>(_ body: () async throws -> T) async rethrows -> T {
                harness.clock.advance(by: 1)
                return try await body()
            }

            // Admin mint: the raw key travels in license.created, and only there.
            let minted = try await step { try await client.mint(seed) }
            let activated = try await step { try await client.activate(seed, key: minted.key, machine: "m-1", name: "Studio") }
            #expect(activated.status == .ok)
            let instance = try #require(activated["instance_id"] as? String)
            // The same machine again, and a refused activation, take no slot and record nothing.
            #expect(try await step { try await client.activate(seed, key: minted.key, machine: "m-1", name: "Studio") }.status == .ok)
            #expect(try await step { try await client.activate(seed, key: "ACME-0000-0000-0000-0000") }.status != .ok)
            #expect(try await step { try await client.sdk("deactivate", ["license_key": minted.key, "instance_id": instance], seed: seed) }.status == .ok)
            #expect(try await step { try await client.sdk("deactivate", ["license_key": minted.key, "instance_id": instance], seed: seed) }.status == .ok)  // already inactive
            #expect(try await step { try await client.admin(.post, "/tenants/acme/products/app/licenses/\(minted.id)/suspend") }.status == .ok)
            #expect(try await step { try await client.admin(.post, "/tenants/acme/products/app/licenses/\(minted.id)/revoke") }.status == .ok)

            // Stripe: a checkout mints (with its own raw key), an invoice renews, a cancellation expires.
            let renewTo = harness.clock.unixSeconds + 30 * 86_400
            for (type, object) in [
                ("checkout.session.completed", StripeWebhookTests.checkout(seed)),
                ("invoice.paid", ["id": "in_1", "subscription": "sub_1", "lines": ["data": [["period": ["end": renewTo]]]]] as [String: Any]),
                ("customer.subscription.deleted", ["id": "sub_1", "object": "subscription"]),
            ] {
                let body = StripeWebhookTests.event(type, object)
                let reply = try await step { try await StripeWebhookTests.deliver(client, body, signature: StripeWebhookTests.signature(body, at: harness.clock.unixSeconds)) }
                #expect(reply.status == .ok && reply["outcome"] as? String != "ignored", "\(type): \(reply.text)")
            }

            let events = try await Self.outbox(client)
            let forAll = events.filter { ($0["_delivery_id"] as? String)?.hasSuffix(":" + all.id) == true }
            let types = forAll.map { $0["type"] as? String ?? "" }
            #expect(types == [
                "license.created", "instance.activated", "instance.deactivated", "license.revoked",
                "license.created", "license.renewed", "license.expired",
            ], "\(types)")
            // The license.created-only endpoint got exactly the two mints, as the same events.
            let createdOnly = events.filter { ($0["_delivery_id"] as? String)?.hasSuffix(":" + all.id) == false }
            #expect(createdOnly.map { $0["id"] as? String } == forAll.filter { $0["type"] as? String == "license.created" }.map { $0["id"] as? String })
            #expect(Set(events.compactMap { $0["id"] as? String }).count == 7)

            let adminMint = forAll[0]
            let data = try #require(adminMint["data"] as? [String: Any])
            #expect(data["license_key"] as? String == minted.key)
            #expect(data["source"] as? String == "admin-token")
            #expect((data["license"] as? [String: Any])?["id"] as? String == minted.id)
            // The license's webhook shape: the fields events have always carried, none of the admin API's others.
            for event in forAll {
                let license = try #require((event["data"] as? [String: Any])?["license"] as? [String: Any])
                #expect(Set(license.keys) == [
                    "id", "product_id", "key_type_id", "masked_key", "status", "expires_at", "customer_email", "active_instances", "created_at",
                ], "\(license.keys.sorted())")
            }
            #expect(adminMint["tenant_id"] as? String == "acme")
            for event in forAll where event["type"] as? String != "license.created" {
                #expect((event["data"] as? [String: Any])?["license_key"] == nil, "\(event)")
            }
            let activation = try #require(forAll[1]["data"] as? [String: Any])
            #expect((activation["instance"] as? [String: Any])?["name"] as? String == "Studio")
            #expect((activation["license"] as? [String: Any])?["active_instances"] as? Int == 1)
            #expect((forAll[2]["data"] as? [String: Any]).flatMap { $0["license"] as? [String: Any] }?["active_instances"] as? Int == 0)
            #expect((forAll[3]["data"] as? [String: Any]).flatMap { $0["license"] as? [String: Any] }?["status"] as? String == "revoked")

            // Stripe's raw key is the key of the license Stripe's checkout minted.
            let stripeMint = try #require(forAll[4]["data"] as? [String: Any])
            #expect(stripeMint["source"] as? String == "stripe")
            let stripeKey = try #require(stripeMint["license_key"] as? String)
            let stripeLicense = try #require(try await StripeWebhookTests.stripeLicenses(client).first)
            #expect(try LicenseKey(stripeKey).keyHash == stripeLicense.keyHash)
            #expect(((forAll[5]["data"] as? [String: Any])?["license"] as? [String: Any])?["expires_at"] as? Int64 == renewTo)
            #expect(((forAll[6]["data"] as? [String: Any])?["license"] as? [String: Any])?["expires_at"] as? Int64 == forAll[6]["created_at"] as? Int64)

            // Nothing is stored in clear: the raw keys are not in the table's text.
            let stored = try await client.database.sql.raw("SELECT sealed_payload FROM webhook_deliveries").all(decodingColumn: "sealed_payload", as: String.self).joined()
            #expect(!stored.contains(minted.key) && !stored.contains(stripeKey))
        }
    }

    @Test func aReceiverThatFailsFiveTimesGetsExactlyOneSuccessfulDelivery() async throws {
        let harness = Harness()
        let receiver = try await RecordingServer { _, index in index < 5 ? .init(500, "not yet") : .init(200, "{}") }
        defer { Task { await receiver.stop() } }
        try await harness.run { client in
            let seed = try await client.seed()
            let (_, secret) = try await Self.register(client, url: receiver.url + "/hooks/keylight", events: ["license.created"])
            let minted = try await client.mint(seed)
            let created = harness.clock.unixSeconds
            for _ in 0..<12 {
                try await client.server.webhooks.deliverDue()
                harness.clock.advance(by: 3_600)
            }
            let requests = receiver.requests
            #expect(receiver.statuses == [500, 500, 500, 500, 500, 200])
            #expect(Set(requests.map(\.text)).count == 1)  // the same event every time
            #expect(Set(requests.compactMap { $0.headers["keylight-event-id"] }).count == 1)
            #expect(requests.map { $0.headers["keylight-delivery-attempt"] } == ["1", "2", "3", "4", "5", "6"])
            for request in requests {
                #expect(request.path == "/hooks/keylight" && request.headers["content-type"] == "application/json")
                let signature = try #require(request.headers["keylight-signature"])
                let t = try #require(signature.split(separator: ",").first.flatMap { Int64($0.dropFirst(2)) })
                #expect(WebhookSignature.isValid(header: signature, body: request.body, secret: secret, now: t))
                #expect(!WebhookSignature.isValid(header: signature, body: request.body, secret: "whsec_other", now: t))
            }
            let body = requests[5].json
            #expect(body["type"] as? String == "license.created")
            #expect((body["data"] as? [String: Any])?["license_key"] as? String == minted.key)

            let delivery = try await Self.delivery(client)
            #expect(delivery.status == .delivered && delivery.attempts == 6 && delivery.lastStatusCode == 200)
            // The sealed event (with the raw key) stays for redelivery, then the purge drops it.
            #expect(delivery.sealedPayload != nil)
            #expect(try await client.database.purgeDeliveryPayloads(finishedBefore: try #require(delivery.finishedAt)) == 0)
            #expect(try await client.database.purgeDeliveryPayloads(finishedBefore: try #require(delivery.finishedAt) + 1) == 1)
            #expect(try await Self.delivery(client).sealedPayload == nil)
            #expect(try #require(delivery.finishedAt) - created < 2 * 3_600 * 6)
            let listed = try await client.admin(.get, "/tenants/acme/webhooks/\(delivery.endpointId)/deliveries")
            let rows = try #require(listed["deliveries"] as? [[String: Any]])
            #expect(rows.count == 1 && rows[0]["status"] as? String == "delivered" && rows[0]["attempts"] as? Int == 6)
        }
        await receiver.stop()
    }

    @Test func retriesBackOffWithJitterAndGiveUpAfterTwoDays() async throws {
        let harness = Harness()
        let receiver = try await RecordingServer { _, _ in .init(503) }
        try await harness.run { client in
            let seed = try await client.seed()
            _ = try await Self.register(client, url: receiver.url + "/down", events: ["license.created"])
            _ = try await client.mint(seed)
            let created = harness.clock.unixSeconds
            var gaps: [Int64] = []
            var last = created
            for _ in 0..<40 {
                let attempted = try await client.server.webhooks.deliverDue()
                #expect(attempted == 1)
                let delivery = try await Self.delivery(client)
                if delivery.status != .pending { break }
                gaps.append(delivery.nextAttemptAt - last)
                last = delivery.nextAttemptAt
                harness.clock.advance(by: delivery.nextAttemptAt - harness.clock.unixSeconds)
            }
            let delivery = try await Self.delivery(client)
            #expect(delivery.status == .failed && delivery.lastStatusCode == 503 && delivery.sealedPayload != nil)
            #expect((14...20).contains(delivery.attempts), "\(delivery.attempts) attempts")
            #expect(receiver.requests.count == delivery.attempts)
            #expect(harness.clock.unixSeconds - created <= 2 * 86_400)
            #expect(harness.clock.unixSeconds - created > 86_400 + 12 * 3_600)  // it kept trying for most of two days
            // Roughly doubling at first (jitter is ±20%), then capped at six hours.
            for (earlier, later) in zip(gaps, gaps.dropFirst()).prefix(8) { #expect(Double(later) > Double(earlier) * 1.2, "\(gaps)") }
            #expect(gaps.allSatisfy { $0 <= Int64(6 * 3_600 * 1.2) + 1 })
            // Nothing more happens.
            harness.clock.advance(by: 86_400)
            #expect(try await client.server.webhooks.deliverDue() == 0)
        }
        await receiver.stop()
    }

    @Test func scheduleIsExponentialCappedAndJittered() {
        let schedule = RetrySchedule()
        #expect((1...12).map(schedule.baseDelay(afterAttempt:)) == [30, 60, 120, 240, 480, 960, 1_920, 3_840, 7_680, 15_360, 21_600, 21_600])
        #expect(schedule.baseDelay(afterAttempt: 500) == 21_600)
        #expect(schedule.nextAttempt(afterAttempt: 1, createdAt: 0, now: 0, unit: 0) == 24)
        #expect(schedule.nextAttempt(afterAttempt: 1, createdAt: 0, now: 0, unit: 0.5) == 30)
        #expect(schedule.nextAttempt(afterAttempt: 1, createdAt: 0, now: 0, unit: 0.999_999) == 36)
        #expect(schedule.nextAttempt(afterAttempt: 12, createdAt: 0, now: 2 * 86_400 - 100, unit: 0.5) == nil)
    }

    @Test func goneStopsDeliveryAndDisablesTheEndpoint() async throws {
        let harness = Harness()
        let receiver = try await RecordingServer { _, _ in .init(410) }
        let healthy = try await RecordingServer()
        try await harness.run { client in
            let seed = try await client.seed()
            let gone = try await Self.register(client, url: receiver.url + "/gone")
            _ = try await Self.register(client, url: healthy.url + "/ok")
            _ = try await client.mint(seed)
            _ = try await client.mint(seed)
            try await client.server.webhooks.deliverDue()
            #expect(healthy.requests.count == 2)
            #expect(receiver.requests.count >= 1)
            let endpoint = try #require(try await client.database.webhookEndpoint(tenantId: "acme", id: gone.id))
            #expect(!endpoint.enabled && endpoint.disabledReason?.contains("410") == true)
            let rows = try await client.database.webhookDeliveries(tenantId: "acme", endpointId: gone.id, limit: 10)
            // Stopped, with the sealed event kept (for redelivery once the receiver is back).
            #expect(rows.count == 2 && rows.allSatisfy { $0.status == .stopped && $0.sealedPayload != nil })
            // Later events skip the disabled endpoint entirely.
            let before = receiver.requests.count
            _ = try await client.mint(seed)
            harness.clock.advance(by: 86_400)
            try await client.server.webhooks.deliverDue()
            #expect(receiver.requests.count == before)
            #expect(healthy.requests.count == 3)
            #expect(try await client.database.webhookDeliveries(tenantId: "acme", endpointId: gone.id, limit: 10).count == 2)
            #expect(try await client.database.auditLog(limit: 20).contains { $0.action == "webhook_endpoint.disable" && $0.actor == "system" })
        }
        await receiver.stop()
        await healthy.stop()
    }

    @Test func pendingDeliveriesSurviveARestart() async throws {
        let path = try ConcurrencyTests.databaseFile()
        let clock = TestClock()
        let receiver = try await RecordingServer()
        let remembered = NIOLockedValueBox((key: "", secret: ""))
        // First run: the event is recorded, the receiver never hears of it before the server stops.
        try await Harness(databasePath: path, clock: clock).run { client in
            let seed = try await client.seed()
            let secret = try await Self.register(client, url: receiver.url + "/after-restart").secret
            let key = try await client.mint(seed).key
            remembered.withLockedValue { $0 = (key, secret) }
        }
        let (key, secret) = remembered.withLockedValue { $0 }
        #expect(receiver.requests.isEmpty)
        // Second run on the same database and master key.
        try await Harness(databasePath: path, clock: clock).run { client in
            #expect(try await client.server.webhooks.deliverDue() == 1)
            #expect(receiver.requests.count == 1)
            let last = try #require(receiver.requests.last)
            #expect((last.json["data"] as? [String: Any])?["license_key"] as? String == key)
            let signature = try #require(last.headers["keylight-signature"])
            #expect(WebhookSignature.isValid(header: signature, body: last.body, secret: secret, now: clock.unixSeconds))
        }
        await receiver.stop()
    }

    @Test(arguments: StorageBackend.available)
    func concurrentDispatchersDeliverEachEventOnce(backend: StorageBackend) async throws {
        let harness = try await Harness.on(backend)
        let receiver = try await RecordingServer()
        try await harness.run { client in
            let seed = try await client.seed()
            _ = try await Self.register(client, url: receiver.url + "/once", events: ["license.created"])
            for _ in 0..<40 { _ = try await client.mint(seed) }
            var small = client.server.webhooks
            small.batchSize = 5
            let dispatchers = [client.server.webhooks, small, small]
            let attempted = try await withThrowingTaskGroup(of: Int.self) { group in
                for dispatcher in dispatchers { group.addTask { try await dispatcher.deliverDue() } }
                return try await group.reduce(0, +)
            }
            #expect(attempted == 40)
            let ids = receiver.requests.compactMap { $0.headers["keylight-event-id"] }
            #expect(ids.count == 40 && Set(ids).count == 40)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'delivered' AND attempts = 1") == 40)
        }
        await receiver.stop()
    }
}
