import Foundation
import HTTPTypes
@testable import KeylightServer
import Testing

/// `GET` and `PUT /admin/v1/tenants/{tenant}/reminders`: defaults, strict checks (a bad body is
/// refused and changes nothing), the audit entry, and what mailing buyers needs.
@Suite(.timeLimit(.minutes(6))) struct ReminderSettingsTests {
    static let path = "/tenants/acme/reminders"

    @Test(arguments: StorageBackend.available)
    func settingsDefaultAreReplacedAndAudited(_ backend: StorageBackend) async throws {
        try await ReminderTests.harness(backend).run { client in
            _ = try await client.seed()
            let defaults = try await client.admin(.get, Self.path)
            #expect(defaults.status == .ok)
            #expect(defaults["days_before"] as? [Int] == [30, 7, 1] && defaults["mail_buyers"] as? Bool == false)

            let put = try await client.admin(.put, Self.path, ["days_before": [1, 60, 14], "mail_buyers": true])
            #expect(put.status == .ok, "\(put.text)")
            #expect(put["days_before"] as? [Int] == [60, 14, 1] && put["mail_buyers"] as? Bool == true)
            let read = try await client.admin(.get, Self.path)
            #expect(read["days_before"] as? [Int] == [60, 14, 1] && read["mail_buyers"] as? Bool == true)
            let audit = try await client.database.auditLog(tenantId: "acme", limit: 20).filter { $0.action == "reminder_settings.update" }
            #expect(audit.count == 1 && audit.first?.actor == "admin-token")

            // PUT replaces: an absent field is the default again.
            let replaced = try await client.admin(.put, Self.path, ["days_before": [3]])
            #expect(replaced["days_before"] as? [Int] == [3] && replaced["mail_buyers"] as? Bool == false)
            #expect(try await client.admin(.put, Self.path, [:])["days_before"] as? [Int] == [30, 7, 1])
            #expect(try await client.admin(.get, "/tenants/nobody/reminders").status == .notFound)
            #expect(try await client.admin(.put, "/tenants/nobody/reminders", [:]).status == .notFound)
        }
    }

    @Test func badSettingsAreRefusedAndChangeNothing() async throws {
        try await ReminderTests.harness(.sqliteMemory).run { client in
            _ = try await client.seed()
            #expect(try await client.admin(.put, Self.path, ["days_before": [14, 2], "mail_buyers": true]).status == .ok)
            let before = NSDictionary(dictionary: try await client.admin(.get, Self.path).json)
            let audited = try await client.count("SELECT COUNT(*) AS n FROM audit_log")
            let bad: [([String: Any], String)] = [
                (["days_before": [Int]()], "INVALID_REQUEST"),
                (["days_before": [0]], "INVALID_REQUEST"),
                (["days_before": [366]], "INVALID_REQUEST"),
                (["days_before": [-7]], "INVALID_REQUEST"),
                (["days_before": [7, 7]], "INVALID_REQUEST"),
                (["days_before": Array(1...9)], "INVALID_REQUEST"),
                (["days_before": ["7"]], "INVALID_REQUEST"),
                (["days_before": [1.5]], "INVALID_REQUEST"),
                (["days_before": 7], "INVALID_REQUEST"),
                (["mail_buyers": "yes"], "INVALID_REQUEST"),
                (["days_before": [7], "remind_by": "sms"], "UNKNOWN_FIELD"),
                (["text_template": "{{#expiry}}unclosed"], "INVALID_REQUEST"),
                (["subject_template": "two\nlines"], "INVALID_REQUEST"),
                (["html_template": String(repeating: "x", count: 32 * 1024 + 1)], "INVALID_REQUEST"),
            ]
            for (body, code) in bad {
                let reply = try await client.admin(.put, Self.path, body)
                #expect(reply.status == .badRequest && reply.code == code, "\(body): \(reply.status) \(reply.text)")
            }
            let notJSON = try await client.request(.put, "/admin/v1" + Self.path, headers: [
                .contentType: "application/json", .authorization: "Bearer \(Harness.adminToken)",
            ], body: "{\"days_before\": [7,")
            #expect(notJSON.status == .badRequest)
            #expect(try await client.admin(.put, Self.path, ["days_before": [7]], token: "wrong").status == .unauthorized)
            #expect(NSDictionary(dictionary: try await client.admin(.get, Self.path).json) == before)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log") == audited)
        }
    }

    /// Mailing buyers needs mail, and the public URL every reminder mail's links start with; the
    /// webhooks need neither.
    @Test func mailingBuyersNeedsMailAndThePublicURL() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            let refused = try await client.admin(.put, Self.path, ["mail_buyers": true])
            #expect(refused.status == .unprocessableContent && refused.code == "MAIL_NOT_CONFIGURED")
            #expect(try await client.admin(.put, Self.path, ["days_before": [10], "mail_buyers": false]).status == .ok)
        }
        var harness = try await ReminderTests.harness(.sqliteMemory)
        harness.configuration.publicURL = nil
        try await harness.run { client in
            _ = try await client.seed()
            let refused = try await client.admin(.put, Self.path, ["mail_buyers": true])
            #expect(refused.status == .unprocessableContent && refused.code == "PUBLIC_URL_NOT_SET")
            #expect(try await client.admin(.get, Self.path)["mail_buyers"] as? Bool == false)
        }
    }
}
