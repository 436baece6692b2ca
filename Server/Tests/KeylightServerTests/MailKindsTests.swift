import Foundation
@testable import KeylightServer
import SQLKit
import Testing

/// Issue 52: during a rolling upgrade a later release may queue mail kinds this build does not
/// know. They are left to the processes that know them: this build's sender claims and sends the
/// rest (release 63ae57f's claim failed to decode such a row and sent nothing at all), and the
/// dashboard's listings of a license's mail still load.
@Suite(.timeLimit(.minutes(6))) struct MailKindsTests {
    @Test(arguments: StorageBackend.available) func aLaterReleasesMailKindIsLeftToIt(_ backend: StorageBackend) async throws {
        let database = try await backend.open()
        do {
            try await database.sql.raw("INSERT INTO tenants (id, name, created_at) VALUES ('acme', 'Acme', 1)").run()
            for (id, kind) in [("m0", "gift_card_from_a_later_release"), ("m1", "license"), ("m2", "lost_keys")] {
                try await database.sql.raw("""
                    INSERT INTO mail_outbox (id, tenant_id, kind, license_id, to_address, status, attempts, next_attempt_at, locked_until, created_at)
                    VALUES (\(bind: id), 'acme', \(bind: kind), 'l1', 'a@example.com', 'pending', 0, 1, 0, 1)
                    """).run()
            }
            let claimed = try await database.claimDueMails(now: 2, limit: 10, lease: 60)
            #expect(claimed.map(\.id).sorted() == ["m1", "m2"])
            #expect(try await database.mails(licenseId: "l1", limit: 10).map(\.id).sorted() == ["m1", "m2"])
            // The unknown row is untouched: not claimed, not failed, for its own release to send.
            let row = try #require(try await database.sql.raw("SELECT status, attempts, locked_until FROM mail_outbox WHERE id = 'm0'").first())
            #expect(try row.decode(column: "status", as: String.self) == "pending" && row.decode(column: "attempts", as: Int.self) == 0 && row.decode(column: "locked_until", as: Int64.self) == 0)
        } catch {
            await database.close()
            throw error
        }
        await database.close()
    }
}
