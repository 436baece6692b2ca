import Foundation
import HTTPTypes
import KeylightServerTestSupport
@testable import KeylightServer
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SQLKit
import Testing

/// Issue 15, point 5: attempts with a total deadline, endpoints that never wait on each other,
/// claims that outlive their attempt, public addresses only, redelivery, and the
/// activation-limit event.
@Suite(.timeLimit(.minutes(6))) struct WebhookDeliveryTests {
    // MARK: Deadlines and independence

    @Test func aDrippingReceiverIsCutOffAtTheDeadlineAndHoldsUpNoOtherEndpoint() async throws {
        let drip = try await DrippingReceiver.start()
        let healthy = try await RecordingServer()
        try await Harness().run { client in
            let seed = try await client.seed()
            let dripping = try await WebhookTests.register(client, url: drip.url + "/slow", events: ["license.created"])
            _ = try await WebhookTests.register(client, url: healthy.url + "/fast", events: ["license.created"])
            _ = try await client.mint(seed)

            var configured = client.server.webhooks
            configured.requestTimeout = .seconds(2)
            configured.pollInterval = .milliseconds(20)
            let dispatcher = configured
            #expect(dispatcher.claimLease >= 2 + 60)
            let running = Task { try await dispatcher.run() }
            defer { running.cancel() }

            // The healthy endpoint is served while the dripping one is still being read.
            #expect(try await eventually { healthy.requests.count == 1 })
            // Both attempts start together; on a loaded machine the dripping one may reach its
            // receiver a moment after the healthy one is answered.
            #expect(try await eventually { drip.requests == 1 })
            let slow = try #require(try await client.database.webhookDeliveries(tenantId: "acme", endpointId: dripping.id, limit: 5).first)
            #expect(slow.status == .pending && slow.lastError == nil)
            let lockedUntil = try #require(try await client.database.sql.raw("SELECT locked_until FROM webhook_deliveries WHERE id = \(bind: slow.id)")
                .first(decodingColumn: "locked_until", as: Int64.self))
            #expect(lockedUntil == client.clock.unixSeconds + dispatcher.claimLease)
            // Another process finds nothing to do: the attempt's claim holds.
            #expect(try await dispatcher.deliverDue() == 0)

            // The drip would take minutes; the attempt ends at its deadline, recorded as a retry.
            #expect(try await eventually(timeout: .seconds(15)) {
                try await client.database.webhookDeliveries(tenantId: "acme", endpointId: dripping.id, limit: 5).first?.lastError != nil
            })
            let ended = try #require(try await client.database.webhookDeliveries(tenantId: "acme", endpointId: dripping.id, limit: 5).first)
            #expect(ended.status == .pending && ended.lastError?.contains("no complete answer") == true && ended.nextAttemptAt > client.clock.unixSeconds)
            #expect(drip.requests == 1)
            #expect(healthy.requests.count == 1)
        }
        await healthy.stop()
        try await drip.stop()
    }

    @Test func theTotalDeadlineBoundsATransportThatNeverAnswers() async throws {
        struct Silent: WebhookTransport {
            func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async throws -> Int {
                try await Task.sleep(for: .seconds(3_600))
                return 200
            }
        }
        await #expect(throws: DeadlineExceeded.self) {
            try await withTotalDeadline(.milliseconds(200)) { try await Silent().post(url: "", headers: [], body: [], timeout: .seconds(1)) }
        }
        #expect(try await withTotalDeadline(.seconds(5)) { 7 } == 7)
    }

    // MARK: Public addresses only

    @Test func nonPublicAddressesAreNamedAndRefused() {
        let refused = [
            "127.0.0.1", "127.200.1.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
            "0.0.0.0", "224.0.0.251", "255.255.255.255", "::", "::1", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1",
            "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a00:1", "2002:7f00:1::1",
        ]
        for text in refused {
            let address = IPAddress(text)!
            #expect(AddressPolicy.publicOnly.refusal(address) != nil, "\(text) was allowed")
            #expect(AddressPolicy(allowPrivate: true).refusal(address) == nil)
        }
        for text in ["93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "64:ff9b::808:808", "2002:808:808::1"] {
            #expect(AddressPolicy.publicOnly.refusal(IPAddress(text)!) == nil, "\(text) was refused")
        }
    }

    struct FakeResolver: HostResolver {
        var answers: [String: [String]]
        func addresses(of host: String) async throws -> [IPAddress] {
            guard let found = answers[host] else { throw UnresolvableHost(host: host) }
            return found.compactMap(IPAddress.init)
        }
    }

    @Test func theTransportConnectsOnlyToTheAddressItChecked() async throws {
        let receiver = try await RecordingServer()
        let resolver = FakeResolver(answers: [
            "127.evil.example": ["127.0.0.1"], "mixed.example": ["93.184.216.34", "10.0.0.7"], "hooks.test": ["127.0.0.1"],
        ])
        let strict = HTTPClientWebhookTransport(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, resolver: resolver, policy: .publicOnly)
        for url in ["http://127.evil.example:\(receiver.port)/x", "http://mixed.example/x", "http://[::ffff:127.0.0.1]:\(receiver.port)/x", "http://127.0.0.1:\(receiver.port)/x", "http://[::1]:\(receiver.port)/x"] {
            await #expect(throws: RefusedAddress.self, "\(url)") { _ = try await strict.post(url: url, headers: [], body: [], timeout: .seconds(2)) }
        }
        await #expect(throws: UnresolvableHost.self) { _ = try await strict.post(url: "https://nowhere.example/x", headers: [], body: [], timeout: .seconds(2)) }
        #expect(receiver.requests.isEmpty)
        // Allowed (development): the request goes to the address the check saw, under the name.
        let open = HTTPClientWebhookTransport(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, resolver: resolver, policy: AddressPolicy(allowPrivate: true))
        #expect(try await open.post(url: "http://hooks.test:\(receiver.port)/named", headers: [], body: Array("{}".utf8), timeout: .seconds(5)) == 200)
        // Only the injected answer knows hooks.test: arriving here means the connection went to
        // the address that was checked.
        #expect(receiver.requests.first?.path == "/named")
        await receiver.stop()
    }

    @Test func theSystemResolverAnswersAndItsWaitIsCancellable() async throws {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let resolver = SystemHostResolver(pool: pool)
        let local = try await resolver.addresses(of: "localhost")
        #expect(!local.isEmpty && local.allSatisfy { AddressPolicy.kind(of: $0) == "loopback" })
        // The only thread is stuck (a DNS server that never answers): the wait still ends on cancel.
        let stuck = DispatchSemaphore(value: 0)
        pool.submit { _ in stuck.wait() }
        let lookup = Task { try await resolver.addresses(of: "localhost") }
        try await Task.sleep(for: .milliseconds(100))
        lookup.cancel()
        await #expect(throws: CancellationError.self) { try await lookup.value }
        stuck.signal()
        try await pool.shutdownGracefully()
    }

    @Test func aServerWithoutTheFlagDeliversOnlyToPublicAddresses() async throws {
        let receiver = try await RecordingServer()
        var harness = Harness()
        harness.configuration.webhookAllowPrivate = false
        harness.configuration.webhookResolver = FakeResolver(answers: ["hooks.example.com": ["127.0.0.1"]])
        try await harness.run { client in
            let seed = try await client.seed()
            for url in ["http://127.0.0.1:\(receiver.port)/x", "http://localhost/x", "https://10.1.2.3/x", "https://[fd00::1]/x", "https://169.254.169.254/latest"] {
                let reply = try await client.admin(.post, "/tenants/acme/webhooks", ["url": url])
                #expect(reply.status == .badRequest && reply.text.contains("public addresses"), "\(url): \(reply.text)")
            }
            // Parsers disagree on international names; only the xn-- spelling is taken.
            let unicode = try await client.admin(.post, "/tenants/acme/webhooks", ["url": "https://bücher.example/hook"])
            #expect(unicode.status == .badRequest && unicode.text.contains("xn--"))
            // A name is checked when it is resolved, at every delivery.
            _ = try await WebhookTests.register(client, url: "https://hooks.example.com/k")
            _ = try await client.mint(seed)
            #expect(try await client.server.webhooks.deliverDue() == 1)
            let delivery = try await WebhookTests.delivery(client)
            #expect(delivery.status == .pending && delivery.lastError?.contains("loopback") == true, "\(delivery.lastError ?? "")")
            #expect(receiver.requests.isEmpty)
        }
        await receiver.stop()
    }

    // MARK: Redelivery

    @Test func aDeliveryCanBeSentAgainFromTheAPIAndTheDashboard() async throws {
        let receiver = try await RecordingServer()
        try await Harness().run { client in
            let seed = try await client.seed()
            let endpoint = try await WebhookTests.register(client, url: receiver.url + "/hook", events: ["license.created"])
            _ = try await client.mint(seed)
            try await client.server.webhooks.deliverDue()
            let first = try await WebhookTests.delivery(client)
            #expect(first.status == .delivered && receiver.requests.count == 1)

            let path = "/tenants/acme/webhooks/\(endpoint.id)/deliveries/\(first.id)/redeliver"
            let again = try await client.admin(.post, path)
            #expect(again.status == .accepted && again["status"] as? String == "pending" && again["event_id"] as? String == first.eventId)
            let newId = try #require(again["id"] as? String)
            #expect(newId != first.id)
            try await client.server.webhooks.deliverDue()
            #expect(receiver.requests.count == 2)
            #expect(receiver.requests.map { $0.headers["keylight-event-id"] } == [first.eventId, first.eventId])
            #expect(receiver.requests.map { $0.headers["keylight-delivery-id"] } == [first.id, newId])
            #expect(try await DashboardTests.auditActions(client).contains("webhook_delivery.redeliver"))

            // The dashboard's button does the same.
            let (browser, _) = try await DashboardTests.signedIn(client)
            let page = try await browser.get("/dashboard/t/acme/webhooks")
            #expect(page.text.contains("/webhooks/\(endpoint.id)/deliveries/\(first.id)/redeliver"))
            #expect(try await browser.post("/dashboard/t/acme/webhooks/\(endpoint.id)/deliveries/\(first.id)/redeliver").status == .seeOther)
            try await client.server.webhooks.deliverDue()
            // (Signing in seeded another license, whose license.created also arrived.)
            #expect(receiver.requests.filter { $0.headers["keylight-event-id"] == first.eventId }.count == 3)

            // Unknown deliveries, purged events and disabled endpoints are refused, changing nothing.
            #expect(try await client.admin(.post, "/tenants/acme/webhooks/\(endpoint.id)/deliveries/nope/redeliver").status == .notFound)
            #expect(try await client.admin(.post, "/tenants/acme/webhooks/we_nope/deliveries/\(first.id)/redeliver").status == .notFound)
            _ = try await client.database.purgeDeliveryPayloads(finishedBefore: client.clock.unixSeconds + 1)
            let purged = try await client.admin(.post, path)
            #expect(purged.status == .conflict && purged.text.contains("no longer kept"))
            _ = try await client.admin(.patch, "/tenants/acme/webhooks/\(endpoint.id)", ["enabled": false])
            #expect(try await client.admin(.post, path).status == .conflict)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'pending'") == 0)
        }
        await receiver.stop()
    }

    // MARK: license.activation_limit_reached

    @Test func anActivationRefusedAtTheCapIsAnnouncedAtMostHourly() async throws {
        let receiver = try await RecordingServer()
        try await Harness().run { client in
            let seed = try await client.seed(limit: 1)
            _ = try await WebhookTests.register(client, url: receiver.url + "/hook", events: ["license.activation_limit_reached"])
            #expect(try await client.activate(seed, machine: "m1").status == .ok)
            #expect(try await client.activate(seed, machine: "m2", name: "Second Mac").status == .conflict)
            #expect(try await client.activate(seed, machine: "m3").status == .conflict)
            #expect(try await WebhookTests.outbox(client).count == 1)
            client.clock.advance(by: 3_601)
            #expect(try await client.activate(seed, machine: "m4").status == .conflict)
            let events = try await WebhookTests.outbox(client)
            #expect(events.count == 2 && events.allSatisfy { $0["type"] as? String == "license.activation_limit_reached" })
            try await client.server.webhooks.deliverDue()
            // Both deliveries run at once: find the first refusal's.
            let data = try #require(receiver.requests.compactMap { $0.json["data"] as? [String: Any] }.first { $0["refused_instance_name"] as? String == "Second Mac" })
            #expect(data["activation_limit"] as? Int == 1 && data["refused_instance_name"] as? String == "Second Mac")
            #expect((data["license"] as? [String: Any])?["id"] as? String == seed.licenseId)
            #expect(data["license_key"] == nil)
        }
        await receiver.stop()
    }
}

/// A receiver that answers 200 with a 1000-byte body (under the 64 KiB the transport reads), then
/// sends it one byte at a time, slowly:
/// the shape of a receiver that would hold a dispatcher whose deadline ends at the head.
final class DrippingReceiver: Sendable {
    let channel: any Channel
    private let count: NIOLockedValueBox<Int>

    var url: String { "http://127.0.0.1:\(channel.localAddress?.port ?? 0)" }
    var requests: Int { count.withLockedValue { $0 } }

    private init(channel: any Channel, count: NIOLockedValueBox<Int>) {
        self.channel = channel
        self.count = count
    }

    static func start() async throws -> DrippingReceiver {
        let count = NIOLockedValueBox(0)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(DripHandler(count: count)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return DrippingReceiver(channel: channel, count: count)
    }

    func stop() async throws {
        try await channel.close()
    }

    private final class DripHandler: ChannelInboundHandler, @unchecked Sendable {
        // @unchecked: all state is touched on the channel's event loop only.
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let count: NIOLockedValueBox<Int>
        var answered = false

        init(count: NIOLockedValueBox<Int>) { self.count = count }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !answered else { return }
            answered = true
            count.withLockedValue { $0 += 1 }
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nContent-Type: text/plain\r\n\r\n")), promise: nil)
            let loop = context.eventLoop
            let bound = NIOLoopBound(context, eventLoop: loop)
            loop.scheduleRepeatedTask(initialDelay: .milliseconds(300), delay: .milliseconds(300)) { task in
                let context = bound.value
                guard context.channel.isActive else { task.cancel(); return }
                context.writeAndFlush(NIOAny(ByteBuffer(string: ".")), promise: nil)
            }
        }
    }
}
