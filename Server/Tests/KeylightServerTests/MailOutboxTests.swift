import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Testing

/// The outbox and the admin API around it, in process (delivery itself is MailDeliveryTests,
/// against a real SMTP server).
@Suite(.timeLimit(.minutes(6))) struct MailOutboxTests {
    /// A harness whose server mails through an SMTP server that is never there: mails stay queued.
    static func harness() throws -> Harness {
        var harness = Harness()
        var mail = MailConfiguration(smtp: try SMTPSettings(url: "smtp://127.0.0.1:1?tls=none"), from: try MailAddress("sales@acme.example"))
        mail.pollInterval = .seconds(3_600)
        harness.configuration.mail = mail
        return harness
    }

    @Test func mintingQueuesTheMailInTheSameTransactionAndOnlyWhenAsked() async throws {
        try await Self.harness().run { client in
            let seed = try await client.seed()
            let plain = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType, "customer_email": "a@example.com"])
            #expect(plain.status == .created)
            #expect(try await client.database.pendingMails(tenantId: "acme").isEmpty)
            let mailed = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType, "customer_email": "b@example.com", "send_email": true])
            #expect(mailed.status == .created)
            let queued = try await client.database.pendingMails(tenantId: "acme")
            #expect(queued.count == 1)
            #expect(queued.first?.licenseId == mailed["id"] as? String && queued.first?.toAddress == "b@example.com" && queued.first?.kind == .license)
            // The row names the license; the key is only sealed in the license row.
            let key = try #require(mailed["license_key"] as? String)
            let licenseId = try #require(mailed["id"] as? String)
            let sealed = try #require(try await client.database.sealedKey(licenseId: licenseId))
            #expect(!sealed.contains(key))
            #expect(try LicenseKeySeal.open(sealed, licenseId: licenseId, with: client.server.admin.sealer) == key)
            // A sealed key opens only for its own license.
            #expect(throws: (any Error).self) { try LicenseKeySeal.open(sealed, licenseId: "another", with: client.server.admin.sealer) }
            // send_email without an address: refused, nothing minted or queued.
            let before = try await client.count("SELECT COUNT(*) AS n FROM licenses")
            let refused = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType, "send_email": true])
            #expect(refused.status == .badRequest)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM licenses") == before)
            #expect(try await client.database.pendingMails(tenantId: "acme").count == 1)
        }
    }

    /// A payment's license queues its mail with it, once however often the event comes; an
    /// address a buyer typed with a line break mints the license (the money was received) but
    /// queues no mail, and cannot be resent to without a corrected address.
    @Test func aPaymentQueuesItsMailOnceAndNeverToAnInjectedAddress() async throws {
        try await Self.harness().run { client in
            let seed = try await StripeWebhookTests.configured(client)
            let paid = StripeMoneyPathTests.session(seed, id: "cs_mail", paymentStatus: "paid")
            for _ in 0..<2 {
                #expect(try await StripeMoneyPathTests.send(client, "checkout.session.completed", paid, id: "evt_mail").status == .ok)
            }
            _ = try await StripeMoneyPathTests.send(client, "checkout.session.completed", paid, id: "evt_mail_again")
            let minted = try await StripeMoneyPathTests.licenses(client, session: "cs_mail")
            #expect(minted.count == 1)
            let queued = try await client.database.pendingMails(tenantId: "acme")
            #expect(queued.count == 1 && queued.first?.licenseId == minted.first?.id && queued.first?.toAddress == "cs_mail@shop.example")

            var injected = StripeMoneyPathTests.session(seed, id: "cs_evil", paymentStatus: "paid")
            injected["customer_details"] = ["email": "buyer@shop.example\r\nBcc: everyone@x.example"]
            #expect(try await StripeMoneyPathTests.outcome(client, "checkout.session.completed", injected) == "minted")
            #expect(try await client.database.pendingMails(tenantId: "acme").count == 1)
            let evil = try #require(try await client.database.sql.raw("SELECT id FROM licenses WHERE customer_email LIKE 'buyer@shop.example%'").first(decodingColumn: "id", as: String.self))
            let resend = try await client.admin(.post, "/tenants/acme/products/app/licenses/\(evil)/email")
            #expect(resend.status == .badRequest && (resend["error"] as? String)?.contains("cannot receive mail") == true)
            #expect(try await client.admin(.post, "/tenants/acme/products/app/licenses/\(evil)/email", ["customer_email": "buyer@shop.example"]).status == .accepted)
            #expect(try await client.database.pendingMails(tenantId: "acme").map(\.toAddress).sorted() == ["buyer@shop.example", "cs_mail@shop.example"])
        }
    }

    @Test func aKeyMintedBeforeSealingCannotBeMailedOnlyReminted() async throws {
        try await Self.harness().run { client in
            let seed = try await client.seed()
            // As a license minted by an earlier release: no sealed key.
            try await client.database.sql.raw("UPDATE licenses SET sealed_key = NULL WHERE id = \(bind: seed.licenseId)").run()
            let refused = try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/email")
            #expect(refused.status == .conflict && refused["code"] as? String == "KEY_NOT_RECOVERABLE")
            #expect(try await client.database.pendingMails(tenantId: "acme").isEmpty)
            let reminted = try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/remint")
            #expect(reminted.status == .ok)
            let resend = try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/email")
            #expect(resend.status == .accepted && resend["to"] as? String == "buyer@example.com")
            #expect(try await client.database.pendingMails(tenantId: "acme").count == 1)
            let audit = try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'license.email'")
            #expect(audit == 1)
        }
    }

    @Test func outboxClaimsAreExclusiveAndBackOff() async throws {
        try await Self.harness().run { client in
            let seed = try await client.seed()
            for index in 0..<3 {
                _ = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType, "customer_email": "c\(index)@example.com", "send_email": true])
            }
            let now = client.clock.unixSeconds
            let first = try await client.database.claimDueMails(now: now, limit: 2, lease: 300)
            let second = try await client.database.claimDueMails(now: now, limit: 10, lease: 300)
            #expect(first.count == 2 && second.count == 1)
            #expect(Set(first.map(\.id)).isDisjoint(with: second.map(\.id)))
            #expect(try await client.database.claimDueMails(now: now, limit: 10, lease: 300).isEmpty)  // all leased
            try await client.database.retryMail(id: first[0].id, error: "451 later", next: now + 60)
            #expect(try await client.database.claimDueMails(now: now + 30, limit: 10, lease: 300).isEmpty)
            #expect(try await client.database.claimDueMails(now: now + 61, limit: 10, lease: 300).map(\.id) == [first[0].id])
            try await client.database.markMailSent(id: first[1].id, now: now)
            try await client.database.failMail(second[0], error: "550 no such user", now: now)
            #expect(try await client.database.claimDueMails(now: now + 10_000, limit: 10, lease: 300).map(\.id) == [first[0].id])
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'mail.failed'") == 1)
            var random = SystemRandomNumberGenerator()
            let delays = (1...12).map { MailService.delay(attempt: $0, base: 30, using: &random) }
            #expect(delays[0] >= 24 && delays[0] <= 36 && delays[11] <= 4 * 3_600 * 1.2 && delays[5] > delays[1])
        }
    }
}
