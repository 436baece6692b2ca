import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Testing

/// Reminder mails to buyers: what they carry (the renewal link, the one-click opt-out of RFC 8058,
/// never the key), and the opt-out itself: POST holds, GET never opts out, bad links are refused.
@Suite(.timeLimit(.minutes(6))) struct ReminderMailTests {
    static let publicURL = "https://licenses.acme.example"

    static func composer(_ client: Client) throws -> MailComposer {
        MailComposer(database: client.database, sealer: client.server.admin.sealer, from: try MailAddress("sales@acme.example", displayName: "Acme Sales"), publicURL: publicURL)
    }

    static func compose(_ client: Client, _ job: MailJob) async throws -> MailMessage {
        var random = SystemRandomNumberGenerator()
        return try await composer(client).compose(job, now: client.clock.unixSeconds, random: &random)
    }

    /// Mail on, an endpoint for both events, and a license (key returned) ending in `days` days.
    static func setUp(_ client: Client, endsInDays days: Int64 = 6) async throws -> (key: String, id: String, seed: Seed) {
        let seed = try await client.seed()
        _ = try await WebhookTests.register(client, url: "https://hooks.example.com/in", events: ReminderTests.events)
        let settings = try await client.admin(.put, "/tenants/acme/reminders", ["mail_buyers": true])
        #expect(settings.status == .ok, "\(settings.text)")
        let minted = try await client.admin(.post, "/tenants/acme/products/app/licenses", [
            "key_type_id": seed.keyType, "customer_email": "buyer@example.com", "expires_at": client.clock.unixSeconds + days * ReminderTests.day,
        ])
        #expect(minted.status == .created)
        return (try #require(minted["license_key"] as? String), try #require(minted["id"] as? String), seed)
    }

    static func reminderMails(_ client: Client) async throws -> [MailJob] {
        try await client.database.pendingMails(tenantId: "acme").filter { $0.kind == .expiryReminder || $0.kind == .updatesReminder }
    }

    /// The opt-out link's path and query, as a mail client would request it.
    static func path(_ message: MailMessage) throws -> String {
        let url = try #require(message.listUnsubscribe)
        #expect(url.hasPrefix(publicURL + "/reminders/unsubscribe?token="))
        return String(url.dropFirst(publicURL.count))
    }

    static func oneClick(_ client: Client, _ path: String, body: String = "List-Unsubscribe=One-Click") async throws -> Reply {
        try await client.request(.post, path, headers: [.contentType: "application/x-www-form-urlencoded"], body: body)
    }

    static func unsubscribedAt(_ client: Client, _ id: String) async throws -> Int64? {
        try await client.database.reminderRecipient(licenseId: id)?.unsubscribedAt
    }

    @Test(arguments: StorageBackend.available)
    func aReminderMailCarriesTheRenewalLinkAndTheOneClickOptOutButNeverTheKey(_ backend: StorageBackend) async throws {
        try await ReminderTests.harness(backend).run { client in
            let (key, id, _) = try await Self.setUp(client)
            #expect(await ReminderTests.sweep(client) == 1)
            let jobs = try await Self.reminderMails(client)
            #expect(jobs.count == 1 && jobs.first?.licenseId == id && jobs.first?.toAddress == "buyer@example.com" && jobs.first?.daysBefore == 7)
            let message = try await Self.compose(client, try #require(jobs.first))
            let link = try #require(message.listUnsubscribe)
            let rendered = message.rendered(boundary: "b")
            #expect(rendered.contains("\r\nList-Unsubscribe: <\(link)>\r\n"))
            #expect(rendered.contains("\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"))
            // The threshold reached was 7 days; the mail says how long is really left when it is sent.
            #expect(message.subject == "Your App license ends in 6 days")
            let masked = try #require(try await client.database.license(id: id)?.maskedKey)
            let date = Date(timeIntervalSince1970: TimeInterval(try #require(try await client.database.license(id: id)?.expiresAt))).formatted(.iso8601.year().month().day())
            for body in [message.text, message.html] {
                #expect(body.contains("\(Self.publicURL)/portal/acme/account"))
                #expect(body.contains(link))
                #expect(body.contains(masked) && body.contains(date))
            }
            #expect(message.text.contains("ends on \(date): in 6 days."), "\(message.text)")
            // Not the key, nor any group of it past the prefix, anywhere in the mail.
            let groups = key.split(separator: "-").dropFirst().map(String.init)
            for part in [message.subject, message.text, message.html, rendered, link] {
                #expect(!part.contains(key))
                #expect(groups.dropLast().allSatisfy { !part.contains($0) })
            }
            // The token names the license by id: neither its key nor the key's hash.
            let token = try #require(link.split(separator: "=").last.map(String.init))
            let signed = try #require(token.split(separator: ".").first)
            let payload = String(decoding: try #require(Base64.decode(signed)), as: UTF8.self)
            let keyHash = try LicenseKey(key).keyHash
            #expect(payload.contains(id) && !payload.contains(key) && !payload.contains(keyHash))
        }
    }

    @Test(arguments: StorageBackend.available)
    func thePostOptsOutForGoodAndTheGetOnlyShowsTheButton(_ backend: StorageBackend) async throws {
        try await ReminderTests.harness(backend).run { client in
            let (_, id, _) = try await Self.setUp(client)
            #expect(await ReminderTests.sweep(client) == 1)
            let job = try #require(try await Self.reminderMails(client).first)
            let path = try Self.path(try await Self.compose(client, job))

            // What a mail scanner does: fetch the link. The page offers the button; nothing changes.
            for _ in 0..<2 {
                let page = try await client.request(.get, path)
                #expect(page.status == .ok)
                #expect(page.text.contains("Stop reminder mails") && page.text.contains("name=\"List-Unsubscribe\" value=\"One-Click\""))
                #expect(page.text.contains("action=\"\(path)\""))
            }
            #expect(try await client.request(.head, path).status == .ok)
            #expect(try await Self.unsubscribedAt(client, id) == nil)
            // A POST without the one-click field is not the opt-out either.
            #expect(try await Self.oneClick(client, path, body: "").status == .badRequest)
            #expect(try await Self.oneClick(client, path, body: "List-Unsubscribe=Maybe").status == .badRequest)
            #expect(try await Self.unsubscribedAt(client, id) == nil)

            // The mail client's one-click POST: 200, recorded, audited once, however often it comes.
            for _ in 0..<2 {
                let done = try await Self.oneClick(client, path)
                #expect(done.status == .ok)
                #expect(done.text.contains("no more reminder mails"))
            }
            #expect(try await Self.unsubscribedAt(client, id) == client.clock.unixSeconds)
            let audit = try await client.database.auditLog(tenantId: "acme", limit: 50).filter { $0.action == "license.reminders_unsubscribe" }
            #expect(audit.count == 1 && audit.first?.target == id && audit.first?.actor == "customer")
            let again = try await client.request(.get, path)
            #expect(again.status == .ok && again.text.contains("no more reminder mails") && !again.text.contains("<button"))

            // The mail already queued is dropped when it is due; the next threshold mails nobody,
            // and the developer's webhook still comes.
            await #expect(throws: MailComposer.NothingToSend.self) { _ = try await Self.compose(client, job) }
            client.clock.advance(by: 5 * ReminderTests.day + 3_600)
            #expect(await ReminderTests.sweep(client) == 1)
            #expect(try await Self.reminderMails(client).count == 1)
            #expect(try await ReminderTests.reminders(client).map(\.days) == [7, 1])
        }
    }

    @Test func badAndExpiredLinksAreRefusedAndChangeNothing() async throws {
        try await ReminderTests.harness(.sqliteMemory).run { client in
            let (_, id, _) = try await Self.setUp(client)
            #expect(await ReminderTests.sweep(client) == 1)
            let path = try Self.path(try await Self.compose(client, try #require(try await Self.reminderMails(client).first)))
            let token = try #require(path.split(separator: "=").last.map(String.init))
            let key = client.server.admin.reminders.linkKey
            let now = client.clock.unixSeconds
            var altered = Array(token)
            altered[altered.count - 2] = altered[altered.count - 2] == "A" ? "B" : "A"
            let bad = [
                "", "?token=", "?token=garbage", "?token=\(String(altered))", "?token=a.b.c", "?token=\(String(repeating: "A", count: 600))",
                // Well signed, but for no license.
                "?token=" + UnsubscribeToken(licenseId: "no-such-license", expiresAt: now + 3_600).signed(with: key),
                // Another server's key (another master key).
                "?token=" + UnsubscribeToken(licenseId: id, expiresAt: now + 3_600).signed(with: SecretSealer.ephemeral().derivedKey(for: UnsubscribeToken.purpose)),
                // The right key for another purpose.
                "?token=" + UnsubscribeToken(licenseId: id, expiresAt: now + 3_600).signed(with: client.server.admin.sealer.derivedKey(for: "something.else")),
            ]
            for query in bad {
                let get = try await client.request(.get, "/reminders/unsubscribe" + query)
                #expect(get.status == .notFound, "GET \(query.prefix(40)): \(get.status)")
                #expect(get.text.contains("This link is not valid"))
                let post = try await Self.oneClick(client, "/reminders/unsubscribe" + query)
                #expect(post.status == .notFound, "POST \(query.prefix(40)): \(post.status)")
            }
            // Expired: 410, said so.
            let old = "/reminders/unsubscribe?token=" + UnsubscribeToken(licenseId: id, expiresAt: now - 1).signed(with: key)
            #expect(try await client.request(.get, old).status == .gone)
            let expired = try await Self.oneClick(client, old)
            #expect(expired.status == .gone && expired.text.contains("expired"))
            // The mail's own link, once its lifetime is over.
            client.clock.advance(by: UnsubscribeToken.lifetime + 1)
            #expect(try await Self.oneClick(client, path).status == .gone)
            #expect(try await Self.unsubscribedAt(client, id) == nil)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'license.reminders_unsubscribe'") == 0)
        }
    }

    @Test func tokensVerifyOnlyAsMade() throws {
        let key = SecretSealer.ephemeral().derivedKey(for: UnsubscribeToken.purpose)
        let token = UnsubscribeToken(licenseId: "lic|with|bars", expiresAt: 2_000)
        let text = token.signed(with: key)
        #expect(text.allSatisfy { $0.isLetter || $0.isNumber || "-_.".contains($0) })
        #expect(UnsubscribeToken.verify(text, key: key, now: 1_999) == .success(token))
        let plain = UnsubscribeToken(licenseId: "2f1c", expiresAt: 2_000).signed(with: key)
        #expect(UnsubscribeToken.verify(plain, key: key, now: 1_999) == .success(UnsubscribeToken(licenseId: "2f1c", expiresAt: 2_000)))
        #expect(UnsubscribeToken.verify(plain, key: key, now: 2_000) == .failure(.expired))
    }

    @Test func aTenantsOwnWordingIsUsedAndShownBesideTheDefaults() async throws {
        try await ReminderTests.harness(.sqliteMemory).run { client in
            let (key, _, _) = try await Self.setUp(client)
            let put = try await client.admin(.put, "/tenants/acme/reminders", [
                "mail_buyers": true, "subject_template": "{{product_name}}: {{days}} left",
                "text_template": "Hi! {{masked_key}} ends {{date}}. Renew: {{renewal_url}} Stop: {{unsubscribe_url}}",
            ])
            #expect(put.status == .ok && put["subject_template"] as? String == "{{product_name}}: {{days}} left", "\(put.text)")
            #expect(put["html_template"] is NSNull && ((put["defaults"] as? [String: Any])?["text_template"] as? String)?.contains("renew") == true)
            #expect((put["variables"] as? [String: String])?["renewal_url"] != nil)
            #expect(await ReminderTests.sweep(client) == 1)
            let message = try await Self.compose(client, try #require(try await Self.reminderMails(client).first))
            #expect(message.subject == "App: 6 days left")
            #expect(message.text.hasPrefix("Hi! ") && message.text.contains("\(Self.publicURL)/portal/acme/account") && !message.text.contains(key))
            // The HTML part keeps the server's wording.
            #expect(message.html.contains("No more reminders about this license"))
        }
    }

    @Test func aSubscriptionsBuyerIsNotAskedToRenewButTheDeveloperIsTold() async throws {
        try await ReminderTests.harness(.sqliteMemory).run { client in
            let (_, id, _) = try await Self.setUp(client)
            try await client.database.sql.raw("UPDATE licenses SET payment_subscription_id = 'sub_1' WHERE id = \(bind: id)").run()
            #expect(await ReminderTests.sweep(client) == 1)
            #expect(try await WebhookTests.outbox(client).filter { $0["type"] as? String == "license.expiring_soon" }.count == 1)
            #expect(try await Self.reminderMails(client).isEmpty)
        }
    }
}
