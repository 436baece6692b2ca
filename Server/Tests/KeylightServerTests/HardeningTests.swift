import Foundation
import HTTPTypes
import KeylightCore
import KeylightSigning
@testable import KeylightServer
import NIOCore
import KeylightTestSupport
import KeylightServerTestSupport
import Testing

/// The server against hostile input, slow and numerous peers, and proxies.
@Suite(.timeLimit(.minutes(6))) struct HardeningTests {
    // MARK: Integer overflow on untrusted input

    @Test func anExtremeStripeTimestampIsRefusedNotFatal() async throws {
        for timestamp in [Int64.min, Int64.max, Int64.min + 1, -1] {
            for now in [Int64.min, 0, 1_781_076_246, Int64.max] {
                #expect(!WebhookSignature.isValid(header: "t=\(timestamp),v1=" + String(repeating: "00", count: 32), body: [], secret: "s", now: now))
            }
        }
        // The tolerance still works at the edges it can reach.
        let body = Array("{}".utf8)
        #expect(WebhookSignature.isValid(header: WebhookSignature.header(timestamp: 1_000, body: body, secret: "s"), body: body, secret: "s", now: 1_300))
        #expect(!WebhookSignature.isValid(header: WebhookSignature.header(timestamp: 1_000, body: body, secret: "s"), body: body, secret: "s", now: 1_301))
        #expect(!WebhookSignature.isValid(header: WebhookSignature.header(timestamp: 1_000, body: body, secret: "s"), body: body, secret: "s", now: 1_300, tolerance: -1))

        try await Harness().run { client in
            _ = try await client.seed()
            #expect(try await client.admin(.put, "/tenants/acme/stripe", ["webhook_secret": "whsec_test"]).status == .ok)
            // Unauthenticated, before any signature check: this request used to trap the process.
            let reply = try await client.request(.post, "/stripe/webhook/acme", headers: [.init("Stripe-Signature")!: "t=-9223372036854775808,v1=00"], body: "{}")
            #expect(reply.status == .badRequest && reply.text.contains("Stripe-Signature"), "\(reply.status) \(reply.text)")
            #expect(try await client.request(.get, "/healthz").status == .ok)
        }
    }

    @Test func aHugeLeaseTTLInTheDashboardIsAFormErrorNotATrap() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            try await DashboardTests.user(client)
            let browser = DashboardBrowser(client)
            #expect(try await browser.signIn(DashboardTests.email, DashboardTests.password).status == .seeOther)
            _ = try await browser.get("/dashboard/t/acme/p/app")
            for days in ["9223372036854775807", "106751991167300", "-5", "0"] {
                let reply = try await browser.post("/dashboard/t/acme/p/app/key-types", [
                    ("id", "big\(days.count)"), ("display_name", "Big"), ("activation_limit", "3"), ("lease_ttl_days", days),
                ])
                #expect(reply.status == .seeOther)
                let page = try await browser.get("/dashboard/t/acme/p/app")
                #expect(page.text.contains("lease_ttl_days must be between 1 and 366"), "\(days)")
            }
            #expect(try await client.database.keyTypes(tenantId: "acme", productId: "app").count == 1)
        }
    }

    // MARK: Slow and numerous peers

    static func live(_ configure: (inout Harness) -> Void = { _ in }, _ body: @escaping @Sendable (Client, Int) async throws -> Void) async throws {
        var harness = Harness()
        configure(&harness)
        try await harness.run(.live) { client in
            try await body(client, try #require(client.client.port))
        }
    }

    @Test func aRequestWhoseHeadersNeverFinishIsAnswered408() async throws {
        try await Self.live({ $0.configuration.connections.requestTimeout = .seconds(1) }) { _, port in
            let slow = try await RawConnection.open(port: port)
            try await slow.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            let started = ContinuousClock.now
            // One more byte now and then: a classic slowloris, which resets any idle timer.
            let trickle = Task {
                for _ in 0..<20 {
                    try await Task.sleep(for: .milliseconds(200))
                    try await slow.send("a")
                }
            }
            let answer = try #require(try await slow.readUntilClosed(timeout: .seconds(10)), "still open after 10 s")
            trickle.cancel()
            #expect(answer.hasPrefix("HTTP/1.1 408 "))
            #expect(answer.contains("REQUEST_TIMEOUT"))
            let took = try #require(slow.closedTime) - started
            #expect(took < .seconds(4), "closed after \(took)")
        }
    }

    @Test func aStalledBodyIsClosedAndAPromptRequestIsNot() async throws {
        try await Self.live({ $0.configuration.connections.requestTimeout = .seconds(1) }) { client, port in
            let seed = try await client.seed()
            let stalled = try await RawConnection.open(port: port)
            // Timed from before the send: the server's clock starts at the first byte it reads, and
            // on a loaded machine this task may resume from the send after the server has already
            // counted part of the second (a close at 1.0 s measured 0.80 s from after the send).
            let started = ContinuousClock.now
            try await stalled.send("POST /acme/app/validate HTTP/1.1\r\nHost: x\r\nX-Keylight-SDK-Key: \(seed.sdkKey)\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"license_key\"")
            // Closed by the 1 s request deadline: not before it, and long before the 60 s idle
            // timeout. The upper bound only ends the wait. (A full run once saw this connection
            // open for 40 s after the server's close: a child process had inherited the socket;
            // see CrashTests.shell.)
            let closed = try await stalled.readUntilClosed(timeout: .seconds(40))
            #expect(closed != nil, "a stalled body kept its connection; received: \(stalled.receivedSoFar.debugDescription)")
            let took = try #require(stalled.closedTime) - started
            #expect(took >= .seconds(0.9) && took < .seconds(40), "closed after \(took)")

            // A complete request on a keep-alive connection is answered however long the server then takes.
            let prompt = try await RawConnection.open(port: port)
            try await prompt.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let answer = try #require(try await prompt.readUntilClosed(timeout: .seconds(10)))
            #expect(answer.hasPrefix("HTTP/1.1 200 "))
        }
    }

    @Test func idleKeepAliveConnectionsAreClosed() async throws {
        try await Self.live({ $0.configuration.connections.idleTimeout = .seconds(1) }) { _, port in
            // Timed from before the connection opens: a lower bound on how long the server let it
            // idle, whatever delays this task meets (read after the send, a late resume made a
            // correct close look early on a loaded CI machine).
            let started = ContinuousClock.now
            let idle = try await RawConnection.open(port: port)
            do {
                try await idle.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            } catch ChannelError.ioOnClosedChannel {
                // This task woke more than a second after connecting (a loaded CI machine): the
                // server had already closed the idle connection, which is what is checked, so
                // only its timing is left to check.
                #expect(try #require(idle.closedTime) - started >= .milliseconds(900))
                return
            }
            let everything = try #require(try await idle.readUntilClosed(timeout: .seconds(10)), "idle connection kept open")
            #expect(everything.hasPrefix("HTTP/1.1 200 "))
            #expect(try #require(idle.closedTime) - started >= .milliseconds(900))
        }
    }

    @Test func threeHundredHalfOpenConnectionsDoNotStopHealthz() async throws {
        try await Self.live { client, port in
            var held: [RawConnection] = []
            for _ in 0..<300 {
                let connection = try await RawConnection.open(port: port)
                try await connection.send("POST /admin/v1/tenants HTTP/1.1\r\nHost: x\r\nContent-Le")
                held.append(connection)
            }
            let started = ContinuousClock.now
            let probe = try await RawConnection.open(port: port)
            try await probe.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let answer = try #require(try await probe.readUntilClosed(timeout: .seconds(5)))
            let took = try #require(probe.closedTime) - started
            #expect(answer.hasPrefix("HTTP/1.1 200 "))
            #expect(took < .seconds(1), "healthz took \(took) beside 300 half-open connections")
            for connection in held { connection.close() }
        }
    }

    @Test func connectionsOverTheCapAreRefusedAtOnce() async throws {
        try await Self.live({ $0.configuration.connections.maxConnections = 5 }) { _, port in
            var held: [RawConnection] = []
            // The test client's own connection may count too: fill up to the cap.
            for _ in 0..<5 { held.append(try await RawConnection.open(port: port)) }
            let started = ContinuousClock.now
            let extra = try await RawConnection.open(port: port)
            let answer = try #require(try await extra.readUntilClosed(timeout: .seconds(5)), "over the cap but not refused")
            #expect(answer.hasPrefix("HTTP/1.1 503 ") && answer.contains("Retry-After: 1"))
            // At once: well inside the request timeout (30 s) a held connection would wait for.
            #expect(try #require(extra.closedTime) - started < .seconds(5))
            // Closing one frees a place.
            for connection in held { connection.close() }
            // The server sees the closes a moment later: poll until a new connection is served.
            let served = try await eventually(timeout: .seconds(10)) {
                let again = try await RawConnection.open(port: port)
                // Still over the cap: answered 503 and closed, perhaps before this write.
                guard (try? await again.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")) != nil else { return false }
                return try await again.readUntilClosed(timeout: .seconds(5))?.hasPrefix("HTTP/1.1 200 ") == true
            }
            #expect(served, "closing held connections did not free a place within 10 s")
        }
    }

    // MARK: Proxies and rate-limit keys

    @Test func forwardedForIsReadOnlyFromTrustedProxiesRightToLeft() throws {
        let proxies = try #require(TrustedProxies(list: "10.0.0.0/8, 2001:db8:ff::/48,127.0.0.1"))
        let proxy = try #require(IPAddress("10.1.2.3"))
        let stranger = try #require(IPAddress("198.51.100.9"))
        // From a trusted proxy: the right-most address that is not a proxy.
        #expect(proxies.client(peer: proxy, forwardedFor: ["203.0.113.5"]) == IPAddress("203.0.113.5"))
        #expect(proxies.client(peer: proxy, forwardedFor: ["1.1.1.1, 203.0.113.5, 10.9.9.9"]) == IPAddress("203.0.113.5"))
        #expect(proxies.client(peer: proxy, forwardedFor: ["1.1.1.1", "203.0.113.5,10.9.9.9"]) == IPAddress("203.0.113.5"))
        // A spoofed left part never wins, and garbage ends the walk at the last trusted hop.
        #expect(proxies.client(peer: proxy, forwardedFor: ["evil, 10.0.0.1"]) == IPAddress("10.0.0.1"))
        #expect(proxies.client(peer: proxy, forwardedFor: ["203.0.113.5:443"]) == proxy)
        // From anyone else the header is ignored.
        #expect(proxies.client(peer: stranger, forwardedFor: ["203.0.113.5"]) == stranger)
        #expect(TrustedProxies.none.client(peer: proxy, forwardedFor: ["203.0.113.5"]) == proxy)
        // IPv6 proxies and clients; clients bucketed per /64, IPv4 per address.
        let v6proxy = try #require(IPAddress("2001:db8:ff:1::2"))
        let a = try #require(proxies.client(peer: v6proxy, forwardedFor: ["2001:db8:1:2:aaaa::1"]))
        let b = try #require(IPAddress("2001:db8:1:2:bbbb::7"))
        #expect(a.rateLimitKey == b.rateLimitKey)
        #expect(a.rateLimitKey != IPAddress("2001:db8:1:3::1")?.rateLimitKey)
        #expect(IPAddress("192.0.2.1")?.rateLimitKey != IPAddress("192.0.2.2")?.rateLimitKey)
        #expect(IPAddress("::ffff:192.0.2.1") == IPAddress("192.0.2.1"))
        // Bad lists are refused whole.
        #expect(TrustedProxies(list: "10.0.0.0/33") == nil && TrustedProxies(list: "proxy.example.com") == nil && TrustedProxies(list: "::/129") == nil)
        #expect(TrustedProxies(list: "0.0.0.0/0")?.client(peer: stranger, forwardedFor: ["203.0.113.5"]) == IPAddress("203.0.113.5"))
    }

    @Test func behindATrustedProxyEachClientHasItsOwnBucket() async throws {
        var limits = ServerLimits.unlimited
        limits.perAddress = RateLimit(perMinute: 1, burst: 2)
        for trusted in [true, false] {
            try await Self.live({
                $0.configuration.limits = limits
                if trusted { $0.configuration.trustedProxies = TrustedProxies(list: "127.0.0.0/8,::1")! }
            }) { client, _ in
                var statuses: [HTTPResponse.Status] = []
                for forwardedFor in ["203.0.113.1", "203.0.113.1", "203.0.113.1", "203.0.113.2"] {
                    statuses.append(try await client.request(.get, "/admin/v1/tenants", headers: [
                        .authorization: "Bearer \(Harness.adminToken)", .init("X-Forwarded-For")!: forwardedFor,
                    ]).status)
                }
                // Another client behind the same proxy has its own bucket only when the proxy is trusted.
                #expect(statuses == [.ok, .ok, .tooManyRequests, trusted ? .ok : .tooManyRequests], "trusted: \(trusted)")
            }
        }
    }

    @Test func theRateLimitTableStaysBoundedAndForgetsOnlyIdleKeys() {
        let limiter = RateLimiter<Int>(limit: RateLimit(perMinute: 60, burst: 1), maxKeys: 100)
        #expect(limiter.acquire(-1, now: 0) == .allowed)
        #expect(limiter.acquire(-1, now: 0) != .allowed)
        for key in 0..<10_000 {
            _ = limiter.acquire(key, now: 0)
            // A key in use is kept across generations: touched every 40 new keys (< 50 per generation).
            if key % 40 == 0 { #expect(limiter.acquire(-1, now: 0) != .allowed) }
        }
        #expect(limiter.count <= 100)
    }

    @Test func plainHTTPWebhooksOnlyToRealLoopbackAddresses() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            for url in ["http://127.attacker.example/hook", "http://127.0.0.1.nip.io/hook", "http://localhost.attacker.example/hook", "http://[::2]/hook", "https://[27:C]/hook", "https://[1.2.3.4]/hook"] {
                let reply = try await client.admin(.post, "/tenants/acme/webhooks", ["url": url])
                #expect(reply.status == .badRequest, "\(url) was accepted")
            }
            for url in ["http://127.0.0.1:8080/hook", "http://127.9.9.9/hook", "http://[::1]:9/hook", "http://localhost/hook", "https://hooks.example.com/k", "https://[2001:db8::1]:8443/k"] {
                #expect(try await client.admin(.post, "/tenants/acme/webhooks", ["url": url]).status == .created, "\(url) was refused")
            }
        }
    }

    // MARK: Password hashing

    @Test func passwordChecksPastTheQueueAreRefusedNotQueued() async throws {
        let hasher = PasswordHasher(threads: 1, capacity: 2)
        let hash = try await hasher.hash("a password that is long", cost: 12)
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<6 {
                group.addTask {
                    do { _ = try await hasher.verify("a password that is long", hash: hash); return true } catch { return false }
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        await hasher.shutdown()
        #expect(outcomes.contains(false), "six checks on a queue of two all ran")
        #expect(outcomes.contains(true))
    }
}

/// Mutated JSON and form bodies against the routes that read them: never a 5xx, never a trap.
@Suite(.timeLimit(.minutes(6))) struct BodyFuzzTests {
    @Test func mutatedBodiesGetClientErrorsOnly() async throws {
        let seed = Mutator.seed("request bodies")
        try await Harness().run { client in
            var random = Mutator(seed: seed)
            let seed = try await client.seed()
            let sdk: [(String, String)] = [
                ("activate", #"{"license_key":"\#(seed.licenseKey)","instance_name":"Mac","machine_hash":"m1","sdk_version":"1"}"#),
                ("validate", #"{"license_key":"\#(seed.licenseKey)","instance_id":"i-1","machine_hash":"m1"}"#),
                ("deactivate", #"{"license_key":"\#(seed.licenseKey)","instance_id":"i-1"}"#),
                ("keyless", #"{"instance_id":"k-1","state":"trial","machine_hash":"m"}"#),
            ]
            let admin: [(String, String)] = [
                ("/admin/v1/tenants/acme/products/app/licenses", #"{"key_type_id":"\#(seed.keyType)","customer_email":"a@b.co","expires_at":1800000000}"#),
                ("/admin/v1/tenants/acme/products/app/key-types", #"{"id":"t2","display_name":"T","activation_limit":3,"duration_days":30,"fallback_access":true,"lease_ttl_seconds":86400,"entitlements":["a"]}"#),
                ("/admin/v1/tenants", #"{"id":"t9","name":"Nine"}"#),
            ]
            try await DashboardTests.user(client)
            let browser = DashboardBrowser(client)
            try await browser.signIn(DashboardTests.email, DashboardTests.password)
            let forms: [(String, String)] = [
                ("/dashboard/t/acme/p/app/key-types", "id=t3&display_name=T&activation_limit=3&duration_days=30&lease_ttl_days=2&fallback_access=on&entitlements=a+b"),
                ("/dashboard/tenants", "id=t8&name=Eight%20Co"),
                ("/dashboard/t/acme/webhooks", "url=https%3A%2F%2Fhooks.example.com%2Fk&events[]=license.created&events[]=license.revoked"),
                ("/dashboard/t/acme/p/app", "name=App&trial_duration_days=14&free_tier_enabled=on"),
            ]
            var statuses: [Int: Int] = [:]
            var formStatuses: [Int: Int] = [:]
            for round in 0..<400 {
                let (action, body) = sdk[round % sdk.count]
                let reply = try await client.request(.post, "/acme/app/\(action)", headers: [.init("X-Keylight-SDK-Key")!: seed.sdkKey, .contentType: "application/json"], body: random.mutate(text: body))
                statuses[Int(reply.status.code), default: 0] += 1
                #expect(reply.status.code < 500, "seed \(random.seed): \(action) answered \(reply.status)")
                let (path, adminBody) = admin[round % admin.count]
                let adminReply = try await client.request(.post, path, headers: [.authorization: "Bearer \(Harness.adminToken)", .contentType: "application/json"], body: random.mutate(text: adminBody))
                #expect(adminReply.status.code < 500, "seed \(random.seed): \(path) answered \(adminReply.status)")
                // Dashboard forms, signed in and with the session's token: the mutations reach the
                // form decoder and the handlers behind it.
                let (formPath, formBody) = forms[round % forms.count]
                let formReply = try await browser.postRaw(formPath, body: random.mutate(text: formBody))
                formStatuses[Int(formReply.status.code), default: 0] += 1
                #expect(formReply.status.code < 500, "seed \(random.seed): \(formPath) answered \(formReply.status): \(formReply.text.prefix(200))")
            }
            // Some forms could not be read (400), some were read and answered with a page or a redirect.
            #expect(formStatuses[400, default: 0] > 0 && formStatuses[303, default: 0] > 0, "\(formStatuses)")
            #expect(try await client.request(.get, "/healthz").status == .ok)
            // The mutations reached the handlers: some bodies were refused, some still accepted.
            #expect(statuses[400, default: 0] > 0)
        }
    }
}
