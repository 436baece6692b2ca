import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Testing

/// The portal's "Lost your key?": the same answer for any address, limits per recipient and per
/// client, and the mail (or none) decided when it is due.
@Suite(.timeLimit(.minutes(6))) struct LostKeyTests {
    static func harness(limits: ServerLimits = .unlimited) throws -> Harness {
        var harness = try MailOutboxTests.harness()
        harness.configuration.limits = limits
        return harness
    }

    static func composer(_ client: Client) throws -> MailComposer {
        MailComposer(database: client.database, sealer: client.server.admin.sealer, from: try MailAddress("sales@acme.example"), publicURL: "https://licenses.acme.example")
    }

    /// The page's notice with the address taken out: what a visitor learns.
    static func notice(_ page: String, address: String) -> String {
        guard let start = page.range(of: "class=\"flash\" role=\"status\">"), let end = page[start.upperBound...].range(of: "</") else { return "" }
        return String(page[start.upperBound..<end.lowerBound]).replacingOccurrences(of: address, with: "ADDRESS")
    }

    @Test func knownAndUnknownAddressesGetTheSameAnswerAndOnlyTheKnownOneAMail() async throws {
        try await Self.harness().run { client in
            let seed = try await client.seed()
            // Two licenses of the tenant under the buyer's address, one under another.
            let second = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType, "customer_email": "Buyer@Example.com"])
            _ = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType, "customer_email": "other@example.com"])
            let visitor = PortalTests.Visitor(client)
            let start = try await visitor.get()
            #expect(start.text.contains("Lost your key?") && start.text.contains("/portal/acme/app/lost-key"))

            let known = try await visitor.post("/lost-key", [("email", "buyer@example.com")])
            let knownPage = try await visitor.get()
            let stranger = PortalTests.Visitor(client)
            _ = try await stranger.get()
            let unknown = try await stranger.post("/lost-key", [("email", "nobody@example.com")])
            let unknownPage = try await stranger.get()
            #expect(known.status == unknown.status && known.status == .seeOther)
            #expect(known.headers[.location] == unknown.headers[.location])
            let knownNotice = Self.notice(knownPage.text, address: "buyer@example.com")
            #expect(!knownNotice.isEmpty && knownNotice == Self.notice(unknownPage.text, address: "nobody@example.com"))

            // Both are queued alike; the mail is decided when it is due.
            let queued = try await client.database.pendingMails(tenantId: "acme").sorted { $0.toAddress < $1.toAddress }
            #expect(queued.map(\.kind) == [.lostKeys, .lostKeys] && queued.map(\.toAddress) == ["buyer@example.com", "nobody@example.com"])
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action LIKE '%lost%'") == 0)
            var random = SystemRandomNumberGenerator()
            let composer = try Self.composer(client)
            let mail = try await composer.compose(queued[0], now: client.clock.unixSeconds, random: &random)
            #expect(mail.to.address == "buyer@example.com")
            let secondKey = try #require(second["license_key"] as? String)
            #expect(mail.text.contains(seed.licenseKey) && mail.text.contains(secondKey))
            #expect(mail.text.contains("https://licenses.acme.example/portal/acme/app"))
            await #expect(throws: MailComposer.NothingToSend.self) { try await composer.compose(queued[1], now: client.clock.unixSeconds, random: &random) }
            // The mail service closes the unknown one as skipped: no mail, no failure, no retry.
            let service = MailService(
                database: client.database, composer: composer, client: SMTPClient(settings: try SMTPSettings(url: "smtp://127.0.0.1:1?tls=none")),
                configuration: MailConfiguration(smtp: try SMTPSettings(url: "smtp://127.0.0.1:1?tls=none"), from: try MailAddress("sales@acme.example")),
                clock: client.clock, metrics: ServerMetrics(), logger: Harness.logger
            )
            await service.send(queued[1])
            let skipped = try await client.count("SELECT COUNT(*) AS n FROM mail_outbox WHERE status = 'skipped' AND to_address = 'nobody@example.com'")
            #expect(skipped == 1)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'mail.failed'") == 0)
            // Finished lost-key rows go after their retention; the pending one stays.
            #expect(try await client.database.purgeLostKeyMails(finishedBefore: client.clock.unixSeconds) == 0)
            #expect(try await client.database.purgeLostKeyMails(finishedBefore: client.clock.unixSeconds + 1) == 1)
            #expect(try await client.database.pendingMails(tenantId: "acme").map(\.toAddress) == ["buyer@example.com"])
        }
    }

    @Test func badAddressesAreRefusedAndQueueNothing() async throws {
        try await Self.harness().run { client in
            _ = try await client.seed()
            let visitor = PortalTests.Visitor(client)
            _ = try await visitor.get()
            for bad in ["", "not-an-address", "a@b.example\r\nBcc: evil@x.example", "a@b.example\nX", "<a@b.example>", String(repeating: "a", count: 250) + "@b.example"] {
                let reply = try await visitor.post("/lost-key", [("email", bad)])
                #expect(reply.status == .badRequest, "\(bad.debugDescription)")
                #expect(reply.text.contains("Enter the email address you bought with"))
            }
            // A form without its token is refused too.
            #expect(try await visitor.post("/lost-key", [("email", "buyer@example.com")], csrf: "forged").status == .forbidden)
            #expect(try await client.database.pendingMails(tenantId: "acme").isEmpty)
        }
    }

    @Test func requestsAreLimitedPerRecipientAndPerClient() async throws {
        var limits = ServerLimits.unlimited
        limits.lostKeyPerRecipient = RateLimit(count: 3, perSeconds: 3_600, burst: 3)
        limits.lostKeyPerClient = RateLimit(count: 10, perSeconds: 3_600, burst: 6)
        try await Self.harness(limits: limits).run { client in
            _ = try await client.seed()
            let visitor = PortalTests.Visitor(client)
            _ = try await visitor.get()
            for _ in 0..<3 { #expect(try await visitor.post("/lost-key", [("email", "buyer@example.com")]).status == .seeOther) }
            _ = try await visitor.get()
            let flooded = try await visitor.post("/lost-key", [("email", "BUYER@example.com")])
            #expect(flooded.status == .tooManyRequests && flooded.headers[.retryAfter] != nil)
            // Another recipient is still served, until the client's own limit.
            _ = try await visitor.get()
            #expect(try await visitor.post("/lost-key", [("email", "a@example.com")]).status == .seeOther)
            _ = try await visitor.get()
            #expect(try await visitor.post("/lost-key", [("email", "b@example.com")]).status == .seeOther)
            _ = try await visitor.get()
            #expect(try await visitor.post("/lost-key", [("email", "c@example.com")]).status == .tooManyRequests)
            #expect(try await client.database.pendingMails(tenantId: "acme").count == 5)
            // An hour later the recipient's bucket has refilled.
            client.clock.advance(by: 3_600)
            _ = try await visitor.get()
            #expect(try await visitor.post("/lost-key", [("email", "buyer@example.com")]).status == .seeOther)
        }
    }

    @Test func aServerThatDoesNotMailSaysSo() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            let visitor = PortalTests.Visitor(client)
            _ = try await visitor.get()
            let reply = try await visitor.post("/lost-key", [("email", "buyer@example.com")])
            #expect(reply.status == .serviceUnavailable && reply.text.contains("Contact the seller"))
            #expect(try await client.database.pendingMails(tenantId: "acme").isEmpty)
        }
    }
}
