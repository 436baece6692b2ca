import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Testing

/// `POST /{tenant}/{product}/lost-key` (protocol 6.9): the portal's "Lost your key?" for an app's
/// license window, behind the SDK key, with the portal's limits (shared with it) and one answer
/// for every address.
@Suite(.timeLimit(.minutes(6))) struct SDKLostKeyTests {
    static func lostKey(_ client: Client, _ seed: Seed, _ email: Any, headers: HTTPFields = [:]) async throws -> Reply {
        try await client.sdk("lost-key", ["email": email], seed: seed, headers: headers)
    }

    @Test func knownAndUnknownAddressesGetTheSameAnswerAndOnlyTheKnownOneAMail() async throws {
        try await LostKeyTests.harness().run { client in
            let seed = try await client.seed(email: "buyer@example.com")
            let nonce = ResponseNonce()
            let known = try await Self.lostKey(client, seed, "  Buyer@Example.com ", headers: [SignedResponseTests.nonceName: nonce.header])
            let unknown = try await Self.lostKey(client, seed, "nobody@example.com")
            #expect(known.status == .accepted && unknown.status == .accepted)
            #expect(known.text == #"{"received":true}"# && unknown.body == known.body)
            for name in [HTTPField.Name.contentType, .cacheControl] { #expect(known.headers[name] == unknown.headers[name]) }
            // Signed like every SDK answer when the app sends a nonce.
            try SignedResponseTests().verify(known, nonce: nonce, path: "/acme/app/lost-key", keyset: try await client.keyset(), now: client.clock.unixSeconds)

            // Both queued alike (the same work either way); the mail is decided when it is due.
            let queued = try await client.database.pendingMails(tenantId: "acme").sorted { $0.toAddress < $1.toAddress }
            #expect(queued.map(\.kind) == [.lostKeys, .lostKeys] && queued.map(\.toAddress) == ["buyer@example.com", "nobody@example.com"])
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action LIKE '%lost%'") == 0)
            var random = SystemRandomNumberGenerator()
            let composer = try LostKeyTests.composer(client)
            let mail = try await composer.compose(queued[0], now: client.clock.unixSeconds, random: &random)
            #expect(mail.to.address == "buyer@example.com" && mail.text.contains(seed.licenseKey))
            await #expect(throws: MailComposer.NothingToSend.self) { try await composer.compose(queued[1], now: client.clock.unixSeconds, random: &random) }
        }
    }

    @Test func aBadAddressIs400NamingTheFieldAndQueuesNothing() async throws {
        try await LostKeyTests.harness().run { client in
            let seed = try await client.seed()
            let naming: [Any] = [
                "", "   ", NSNull(), "not-an-address", "a@b", "@b.example", "a@b.example\r\nBcc: evil@x.example", "a@b.example\u{7}",
                "<a@b.example>", "Ada <a@b.example>", "ü@b.example", "a b@c.example", 42, String(repeating: "a", count: 250) + "@b.example",
            ]
            for email in naming {
                let reply = try await Self.lostKey(client, seed, email)
                #expect(reply.status == .badRequest && reply.code == "INVALID_REQUEST", "\(email): \(reply.text)")
                #expect((reply["error"] as? String)?.contains("email") == true, "\(email): \(reply.text)")
            }
            for body in ["{}", "[]", "{not json", #"{"mail":"a@b.example"}"#] {
                let reply = try await client.sdkRaw("lost-key", body: body, seed: seed)
                #expect(reply.status == .badRequest && reply.code == "INVALID_REQUEST", "\(body): \(reply.text)")
            }
            #expect(try await client.database.pendingMails(tenantId: "acme").isEmpty)
        }
    }

    /// The portal's limits, with the portal's own limiters: alternating the two doors spends one
    /// budget per client and one per recipient.
    @Test func limitedPerClientAndPerRecipientSharingThePortalsBudget() async throws {
        var limits = ServerLimits.unlimited
        limits.lostKeyPerRecipient = RateLimit(count: 3, perSeconds: 3_600, burst: 3)
        limits.lostKeyPerClient = RateLimit(count: 10, perSeconds: 3_600, burst: 6)
        try await LostKeyTests.harness(limits: limits).run { client in
            let seed = try await client.seed()
            let visitor = PortalTests.Visitor(client)
            _ = try await visitor.get()
            // The recipient's 3: two from the app, one from the portal.
            for _ in 0..<2 { #expect(try await Self.lostKey(client, seed, "buyer@example.com").status == .accepted) }
            #expect(try await visitor.post("/lost-key", [("email", "buyer@example.com")]).status == .seeOther)
            let flooded = try await Self.lostKey(client, seed, "BUYER@example.com")
            #expect(flooded.status == .tooManyRequests && flooded.code == "RATE_LIMITED" && flooded.headers[.retryAfter] != nil)
            // The client's 6: four spent above, one more through each door, then neither serves it.
            _ = try await visitor.get()
            #expect(try await visitor.post("/lost-key", [("email", "a@example.com")]).status == .seeOther)
            #expect(try await Self.lostKey(client, seed, "b@example.com").status == .accepted)
            let spent = try await Self.lostKey(client, seed, "c@example.com")
            #expect(spent.status == .tooManyRequests && spent.code == "RATE_LIMITED" && spent.headers[.retryAfter] != nil)
            _ = try await visitor.get()
            #expect(try await visitor.post("/lost-key", [("email", "d@example.com")]).status == .tooManyRequests)
            #expect(try await client.database.pendingMails(tenantId: "acme").count == 5)
            // An hour later both budgets have refilled.
            client.clock.advance(by: 3_600)
            #expect(try await Self.lostKey(client, seed, "buyer@example.com").status == .accepted)
            #expect(try await client.database.pendingMails(tenantId: "acme").count == 6)
        }
    }

    @Test func itWorksWithThePortalSwitchedOff() async throws {
        try await LostKeyTests.harness().run { client in
            let seed = try await client.seed()
            #expect(try await client.admin(.patch, "/tenants/acme/products/app", ["portal_enabled": false])["portal_enabled"] as? Bool == false)
            #expect(try await client.request(.get, "/portal/acme/app").status == .notFound)
            let reply = try await Self.lostKey(client, seed, "buyer@example.com")
            #expect(reply.status == .accepted && reply.text == #"{"received":true}"#)
            #expect(try await client.database.pendingMails(tenantId: "acme").map(\.toAddress) == ["buyer@example.com"])
        }
    }

    @Test func aServerThatDoesNotMailSaysSoWithTheDocumentedCode() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            for email in ["buyer@example.com", "not-an-address"] {
                let reply = try await Self.lostKey(client, seed, email)
                #expect(reply.status == .unprocessableContent && reply.code == "MAIL_NOT_CONFIGURED", "\(reply.text)")
                #expect((reply["error"] as? String)?.contains("Contact the seller") == true)
            }
            #expect(try await client.count("SELECT COUNT(*) AS n FROM mail_outbox") == 0)
        }
    }

    @Test func theSDKKeyAndTheBodyLimitComeFirst() async throws {
        try await LostKeyTests.harness().run { client in
            let seed = try await client.seed()
            let body = #"{"email":"buyer@example.com"}"#
            let missing = try await client.request(.post, "/acme/app/lost-key", headers: [.contentType: "application/json"], body: body)
            #expect(missing.status == .unauthorized && missing.code == "UNAUTHORIZED")
            let wrong = try await client.sdkRaw("lost-key", body: body, seed: seed, sdkKey: seed.sdkKey + "x")
            #expect(wrong.status == .unauthorized && wrong.code == "UNAUTHORIZED")
            let elsewhere = try await client.sdkRaw("lost-key", body: body, seed: seed, path: "/acme/nothing/lost-key")
            #expect(elsewhere.status == .notFound && elsewhere.code == "NOT_FOUND")
            let huge = #"{"email":"buyer@example.com","pad":"\#(String(repeating: "x", count: 70_000))"}"#
            let oversized = try await client.sdkRaw("lost-key", body: huge, seed: seed)
            #expect(oversized.status == .contentTooLarge && oversized.code == "PAYLOAD_TOO_LARGE")
            #expect(try await client.request(.get, "/acme/app/lost-key", headers: [.init("X-Keylight-SDK-Key")!: seed.sdkKey]).status == .methodNotAllowed)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM mail_outbox") == 0)
        }
    }
}
