import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Testing

/// A tenant's mail settings (`/admin/v1/tenants/{t}/mail`), their checks, the preview, and the
/// mail a buyer gets from them.
@Suite(.timeLimit(.minutes(6))) struct MailSettingsTests {
    @Test func settingsAreCheckedBeforeAnythingIsStored() async throws {
        try await MailOutboxTests.harness().run { client in
            _ = try await client.seed()
            let initial = try await client.admin(.get, "/tenants/acme/mail")
            #expect(initial.status == .ok)
            #expect(initial["sender_name"] is NSNull && initial["subject_template"] is NSNull && initial["html_template"] is NSNull)
            #expect((initial["defaults"] as? [String: Any])?["subject_template"] as? String == MailTemplates.subject)
            #expect((initial["variables"] as? [String: Any])?["license_key"] != nil)

            let refusals: [[String: Any]] = [
                ["sender_name": "Acme\r\nBcc: evil@x.example"],
                ["sender_name": "Acme\nX"],
                ["reply_to": "help@acme.example\r\nBcc: evil@x.example"],
                ["reply_to": "Acme <help@acme.example>\nX: y"],
                ["reply_to": "not an address"],
                ["subject_template": "Your key\r\nBcc: evil@x.example"],
                ["subject_template": String(repeating: "x", count: 501)],
                ["text_template": "{{#license_key}}never closed"],
                ["html_template": "<p>{{/product_name}}</p>"],
                // Found by schemathesis: parses alone, but not behind the text pragma it is rendered with.
                ["subject_template": "\u{1F3FB}"],
                ["text_template": String(repeating: "x", count: 33 * 1024)],
            ]
            for body in refusals {
                let reply = try await client.admin(.put, "/tenants/acme/mail", body)
                #expect(reply.status == .badRequest, "\(body)")
                #expect(reply.code == "INVALID_REQUEST", "\(body)")
            }
            let unparsable = try await client.admin(.put, "/tenants/acme/mail", ["text_template": "Key:\n{{#license_key}}never closed"])
            #expect((unparsable["error"] as? String)?.contains("text_template is not a valid Mustache template (line 2") == true, "\(unparsable.text)")
            #expect(try await client.database.mailSettings(tenantId: "acme") == nil)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'mail_settings.update'") == 0)
            #expect(try await client.admin(.put, "/tenants/nobody/mail", ["sender_name": "X"]).status == .notFound)
            #expect(try await client.admin(.get, "/tenants/acme/mail", token: "wrong").status == .unauthorized)

            let saved = try await client.admin(.put, "/tenants/acme/mail", [
                "sender_name": "Acme Café", "reply_to": "Acme Support <support@acme.example>",
                "subject_template": "{{product_name}}: your key", "text_template": "Key: {{license_key}}", "html_template": "",
            ])
            #expect(saved.status == .ok)
            #expect(saved["sender_name"] as? String == "Acme Café" && saved["html_template"] is NSNull)
            let stored = try #require(try await client.database.mailSettings(tenantId: "acme"))
            #expect(stored == MailSettings(senderName: "Acme Café", replyTo: "Acme Support <support@acme.example>", subjectTemplate: "{{product_name}}: your key", textTemplate: "Key: {{license_key}}"))
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'mail_settings.update'") == 1)
            // PUT replaces the whole: what is left out goes back to the default.
            #expect(try await client.admin(.put, "/tenants/acme/mail", ["sender_name": "Acme"]).status == .ok)
            #expect(try await client.database.mailSettings(tenantId: "acme") == MailSettings(senderName: "Acme"))
        }
    }

    @Test func thePreviewRendersDraftsAndTheStoredSettingsAlike() async throws {
        try await MailOutboxTests.harness().run { client in
            _ = try await client.seed()
            let stored = try await client.admin(.post, "/tenants/acme/mail/preview")
            #expect(stored.status == .ok)
            #expect(stored["subject"] as? String == "Your App license key")
            let text = try #require(stored["text"] as? String)
            #expect(text.contains("ACME-"))
            #expect(!text.contains("runs until"))  // a license without an end says none
            #expect((stored["from"] as? String)?.hasSuffix("<sales@acme.example>") == true)
            let draft = try await client.admin(.post, "/tenants/acme/mail/preview", [
                "sender_name": "Ünïcode Sales", "subject_template": "{{product_name}} for {{customer_email}}", "html_template": "<p>{{product_name}} & {{license_key}}</p>",
            ])
            #expect(draft["subject"] as? String == "App for buyer@example.com")
            #expect((draft["html"] as? String)?.hasPrefix("<p>App & ACME-") == true)
            #expect(draft["from"] as? String == "Ünïcode Sales <sales@acme.example>")
            // A draft is not saved, and a broken one is refused like a PUT.
            #expect(try await client.database.mailSettings(tenantId: "acme") == nil)
            #expect(try await client.admin(.post, "/tenants/acme/mail/preview", ["text_template": "{{#x}}"]).status == .badRequest)
        }
    }

    @Test func theMailABuyerGetsUsesTheTenantsSettings() async throws {
        try await MailOutboxTests.harness().run { client in
            let seed = try await client.seed()
            #expect(try await client.admin(.put, "/tenants/acme/mail", [
                "sender_name": "Acme Café", "reply_to": "support@acme.example",
                "subject_template": "{{product_name}} — your key", "text_template": "Here: {{license_key}}",
            ]).status == .ok)
            let minted = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType, "customer_email": "b@example.com", "send_email": true])
            let key = try #require(minted["license_key"] as? String)
            let job = try #require(try await client.database.pendingMails(tenantId: "acme").first)
            let composer = MailComposer(database: client.database, sealer: client.server.admin.sealer, from: try MailAddress("sales@acme.example", displayName: "Sales"), publicURL: nil)
            var random = SystemRandomNumberGenerator()
            let message = try await composer.compose(job, now: client.clock.unixSeconds, random: &random)
            #expect(message.from.displayName == "Acme Café" && message.replyTo?.address == "support@acme.example")
            #expect(message.subject == "App — your key" && message.text == "Here: \(key)")
            #expect(message.html.contains(key))  // the default HTML body
            let rendered = message.rendered(boundary: "b")
            #expect(rendered.contains("From: =?UTF-8?B?") && rendered.contains("Reply-To: support@acme.example") && rendered.contains("Subject: =?UTF-8?B?"))
        }
    }
}
