import Foundation
import KeylightCore
@testable import KeylightServer
import NIOConcurrencyHelpers
import SQLKit
import Testing

/// Reminders before a license ends or its updates do (issue 49, part 7): the sweep, its
/// thresholds as the clock moves, which licenses it skips, and "once" across processes, on every
/// storage backend.
@Suite(.timeLimit(.minutes(6))) struct ReminderTests {
    static let day: Int64 = 86_400
    static let events = ["license.expiring_soon", "license.updates_expiring_soon"]

    /// A server on `backend` that can mail buyers (to an SMTP server that is never there, so mails
    /// stay queued) and knows its public URL.
    static func harness(_ backend: StorageBackend) async throws -> Harness {
        var harness = try await Harness.on(backend)
        var mail = MailConfiguration(smtp: try SMTPSettings(url: "smtp://127.0.0.1:1?tls=none"), from: try MailAddress("sales@acme.example"))
        mail.pollInterval = .seconds(3_600)
        harness.configuration.mail = mail
        harness.configuration.publicURL = "https://licenses.acme.example"
        return harness
    }

    static func sweep(_ client: Client, batch: Int = 100) async -> Int {
        await client.server.admin.reminders.sweep(batch: batch)
    }

    /// The reminder events recorded so far, as (license id, type, days_before, date).
    static func reminders(_ client: Client) async throws -> [(license: String, type: String, days: Int, date: Int64)] {
        try await WebhookTests.outbox(client).filter { Self.events.contains($0["type"] as? String ?? "") }.map { event in
            let data = try #require(event["data"] as? [String: Any])
            let license = try #require(data["license"] as? [String: Any])
            return (try #require(license["id"] as? String), try #require(event["type"] as? String),
                    try #require(data["days_before"] as? Int), try #require((data["date"] as? NSNumber)?.int64Value))
        }
    }

    /// A license of the seed's key type with these dates.
    static func license(_ client: Client, _ seed: Seed, expiresAt: Int64? = nil, updatesUntil: Int64? = nil, email: String = "buyer@example.com") async throws -> String {
        var body: [String: Any] = ["key_type_id": seed.keyType, "customer_email": email]
        if let expiresAt { body["expires_at"] = expiresAt }
        if let updatesUntil { body["updates_until"] = updatesUntil }
        let reply = try await client.admin(.post, "/tenants/acme/products/app/licenses", body)
        #expect(reply.status == .created, "\(reply.text)")
        return try #require(reply["id"] as? String)
    }

    @Test func thresholdsAreTheNearestReachedAndPassOverTheLargerOnes() {
        let schedule = ReminderSchedule(daysBefore: [1, 30, 7])
        #expect(schedule.daysBefore == [30, 7, 1])
        let date: Int64 = 1_000 * Self.day
        #expect(schedule.due(date: date, now: date - 31 * Self.day) == nil)
        #expect(schedule.due(date: date, now: date - 30 * Self.day) == 30)
        #expect(schedule.due(date: date, now: date - 8 * Self.day) == 30)
        #expect(schedule.due(date: date, now: date - 5 * Self.day) == 7)
        #expect(schedule.due(date: date, now: date - 1) == 1)
        #expect(schedule.due(date: date, now: date) == nil)
        #expect(schedule.passedOver(by: 7) == [30])
        #expect(schedule.passedOver(by: 1) == [30, 7])
        #expect(schedule.passedOver(by: 30).isEmpty)
    }

    @Test(arguments: StorageBackend.available)
    func eachThresholdIsSentOnceAsTheClockAdvancesAndARenewalStartsAgain(_ backend: StorageBackend) async throws {
        try await Harness.on(backend).run { client in
            let seed = try await client.seed()
            _ = try await WebhookTests.register(client, url: "https://hooks.example.com/in", events: Self.events)
            let start = client.clock.unixSeconds
            let ends = try await Self.license(client, seed, expiresAt: start + 40 * Self.day)
            // A lifetime license with a year of updates: only the updates reminder.
            let updates = try await Self.license(client, seed, updatesUntil: start + 40 * Self.day)

            #expect(await Self.sweep(client) == 0)
            var expected: [(String, String, Int)] = []
            for (advance, days) in [(10, 30), (23, 7), (6, 1)] {
                client.clock.advance(by: Int64(advance) * Self.day)
                #expect(await Self.sweep(client) == 2)
                #expect(await Self.sweep(client) == 0, "a second sweep at the same moment sends nothing")
                expected += [(ends, "license.expiring_soon", days), (updates, "license.updates_expiring_soon", days)]
                let sent = try await Self.reminders(client)
                #expect(sent.map { "\($0.license) \($0.type) \($0.days)" }.sorted() == expected.map { "\($0.0) \($0.1) \($0.2)" }.sorted())
                #expect(sent.allSatisfy { $0.date == start + 40 * Self.day })
            }
            // The date itself: nothing more.
            client.clock.advance(by: 2 * Self.day)
            #expect(await Self.sweep(client) == 0)
            #expect(try await client.database.reminders(licenseId: ends).map(\.days) == [30, 7, 1])
            #expect(try await client.database.reminders(licenseId: ends).allSatisfy(\.sent))

            // Renewed for a year: the same thresholds count again, for the new date.
            let newEnd = client.clock.unixSeconds + 365 * Self.day
            let renewed = try await LicenseEditTests.patch(client, ends, ["expires_at": newEnd])
            #expect(renewed.status == .ok, "\(renewed.text)")
            #expect(await Self.sweep(client) == 0)
            client.clock.advance(by: 336 * Self.day)
            #expect(await Self.sweep(client) == 1)
            let last = try #require(try await Self.reminders(client).last)
            #expect(last.license == ends && last.days == 30 && last.date == newEnd)
            // Reminders are not audited (nothing changed); the rows say what was sent.
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action LIKE '%remind%'") == 0)
        }
    }

    @Test(arguments: StorageBackend.available)
    func aLicenseFoundLateGetsOnlyTheNearestThreshold(_ backend: StorageBackend) async throws {
        try await Self.harness(backend).run { client in
            let seed = try await client.seed()
            _ = try await WebhookTests.register(client, url: "https://hooks.example.com/in", events: Self.events)
            #expect(try await client.admin(.put, "/tenants/acme/reminders", ["days_before": [30, 7, 1], "mail_buyers": true]).status == .ok)
            let now = client.clock.unixSeconds
            // Minted five days before its end: 30 and 7 were both reached before anybody looked.
            let late = try await Self.license(client, seed, expiresAt: now + 5 * Self.day)
            #expect(await Self.sweep(client) == 1)
            let sent = try await Self.reminders(client)
            #expect(sent.count == 1 && sent.first?.license == late && sent.first?.days == 7)
            let rows = try await client.database.reminders(licenseId: late)
            #expect(rows.map(\.days) == [30, 7] && rows.map(\.sent) == [false, true])
            // One mail, not two.
            let mails = try await client.database.pendingMails(tenantId: "acme").filter { $0.licenseId == late }
            #expect(mails.count == 1 && mails.first?.kind == .expiryReminder && mails.first?.daysBefore == 7)

            client.clock.advance(by: 4 * Self.day + 3_600)
            #expect(await Self.sweep(client) == 1)
            #expect(try await Self.reminders(client).map(\.days) == [7, 1])
            #expect(try await client.database.pendingMails(tenantId: "acme").filter { $0.licenseId == late }.map(\.daysBefore) == [7, 1])
        }
    }

    @Test(arguments: StorageBackend.available)
    func revokedSuspendedLifetimeAndUndatedLicensesGetNone(_ backend: StorageBackend) async throws {
        try await Harness.on(backend).run { client in
            let seed = try await client.seed()
            _ = try await WebhookTests.register(client, url: "https://hooks.example.com/in", events: Self.events)
            let soon = client.clock.unixSeconds + 3 * Self.day
            let revoked = try await Self.license(client, seed, expiresAt: soon, updatesUntil: soon)
            let suspended = try await Self.license(client, seed, expiresAt: soon)
            _ = try await Self.license(client, seed)  // lifetime, every update
            // Its updates end soon but the license itself ended: nobody's concern.
            _ = try await Self.license(client, seed, expiresAt: client.clock.unixSeconds - 3_600, updatesUntil: soon)
            // Starts on its first activation: undated until then.
            try await LicenseEditTests.keyType(client, "gift", entitlements: [], extra: ["duration_days": 365, "expires_from": "first_activation"])
            let gift = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": "gift"])
            #expect(gift.status == .created && gift["expires_at"] is NSNull)
            for (id, action) in [(revoked, "revoke"), (suspended, "suspend")] {
                #expect(try await client.admin(.post, "/tenants/acme/products/app/licenses/\(id)/\(action)").status == .ok)
            }
            #expect(await Self.sweep(client) == 0)
            #expect(try await Self.reminders(client).isEmpty)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM license_reminders") == 0)

            // Reinstated, it is reminded at once (of the nearest threshold).
            #expect(try await client.admin(.post, "/tenants/acme/products/app/licenses/\(suspended)/reinstate").status == .ok)
            #expect(await Self.sweep(client) == 1)
            #expect(try await Self.reminders(client).map { "\($0.license) \($0.days)" } == ["\(suspended) 7"])
        }
    }

    @Test(arguments: StorageBackend.available)
    func aTenantsOwnThresholdsAndNoWorkWhenNobodyListens(_ backend: StorageBackend) async throws {
        try await Harness.on(backend).run { client in
            let seed = try await client.seed()
            let id = try await Self.license(client, seed, expiresAt: client.clock.unixSeconds + 20 * Self.day)
            // No endpoint takes the events and buyers are not mailed: nothing is claimed, so an
            // endpoint added later still hears of the nearest threshold.
            #expect(await Self.sweep(client) == 0)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM license_reminders") == 0)
            #expect(try await client.admin(.put, "/tenants/acme/reminders", ["days_before": [3, 14]]).status == .ok)
            _ = try await WebhookTests.register(client, url: "https://hooks.example.com/in", events: ["license.expiring_soon"])
            #expect(await Self.sweep(client) == 0)
            client.clock.advance(by: 6 * Self.day)
            #expect(await Self.sweep(client) == 1)
            client.clock.advance(by: 11 * Self.day)
            #expect(await Self.sweep(client) == 1)
            #expect(try await Self.reminders(client).map { "\($0.license) \($0.days)" } == ["\(id) 14", "\(id) 3"])
            // The updates event is not taken: no updates reminder was claimed either.
            #expect(try await client.count("SELECT COUNT(*) AS n FROM license_reminders WHERE kind = 'updates'") == 0)
        }
    }

    /// Two sweeps at once against one database, as two server processes would run them (on an
    /// in-memory database, two sweeps of one process): one event and one mail per license, kind
    /// and threshold, whoever got there first.
    @Test(arguments: StorageBackend.available)
    func twoProcessesSweepingAtOnceSendEachReminderOnce(_ backend: StorageBackend) async throws {
        let first = try await Self.harness(backend)
        try await first.run { client in
            let seed = try await client.seed()
            _ = try await WebhookTests.register(client, url: "https://hooks.example.com/in", events: Self.events)
            #expect(try await client.admin(.put, "/tenants/acme/reminders", ["mail_buyers": true]).status == .ok)
            let now = client.clock.unixSeconds
            var licenses: [String] = []
            for index in 0..<24 {
                // Ends in 0.5, 5 or 20 days (nearest 1, 7, 30); every third also has its updates end.
                let ends = now + [Self.day / 2, 5 * Self.day, 20 * Self.day][index % 3]
                licenses.append(try await Self.license(client, seed, expiresAt: ends, updatesUntil: index % 3 == 0 ? ends : nil, email: "b\(index)@example.com"))
            }
            let sweeps: @Sendable (Client) async throws -> Int
            if backend == .sqliteMemory {
                sweeps = { client in
                    async let a = Self.sweep(client, batch: 3)
                    async let b = Self.sweep(client, batch: 5)
                    return await a + b
                }
            } else {
                // A second server on the same file or schema, with its own pools and writer gate.
                let second = first
                sweeps = { client in
                    let total = NIOLockedValueBox(0)
                    try await second.run { other in
                        async let a = Self.sweep(client, batch: 3)
                        async let b = Self.sweep(other, batch: 5)
                        let sum = await a + b
                        total.withLockedValue { $0 = sum }
                    }
                    return total.withLockedValue { $0 }
                }
            }
            #expect(try await sweeps(client) == 24 + 8)
            #expect(try await sweeps(client) == 0)
            let sent = try await Self.reminders(client)
            #expect(sent.count == 32)
            #expect(Set(sent.map { "\($0.license) \($0.type) \($0.days)" }).count == 32)
            let mails = try await client.database.pendingMails(tenantId: "acme").filter { $0.kind != .license }
            #expect(mails.count == 32)
            #expect(Set(mails.map { "\($0.licenseId ?? "") \($0.kind.rawValue) \($0.daysBefore ?? 0)" }).count == 32)
            #expect(Set(mails.compactMap(\.licenseId)) == Set(licenses))
            #expect(try await client.count("SELECT COUNT(*) AS n FROM license_reminders WHERE sent") == 32)
            // A process that reads a license as due after another sent its reminder loses the claim
            // and writes nothing.
            let now2 = client.clock.unixSeconds
            let decide: @Sendable (License, Bool) -> ReminderSend? = { license, _ in
                ReminderRules.due(license, kind: .expires, schedule: ReminderSchedule(daysBefore: ReminderSchedule.defaultDays), now: now2).map {
                    ReminderSend(threshold: $0.threshold, passedOver: $0.passedOver, date: $0.date,
                                 entry: ChangeLog(tenantId: "acme", now: now2).reminderDue(license, kind: .expires, daysBefore: $0.threshold, date: $0.date), mailTo: "x@example.com")
                }
            }
            #expect(try await client.database.remind(licenseId: licenses[0], kind: .expires, now: now2, decide: decide) == false)
            #expect(try await Self.reminders(client).count == 32)
            #expect(try await client.database.pendingMails(tenantId: "acme").filter { $0.kind != .license }.count == 32)
        }
    }

    /// The migration adds only tables, nullable columns and indexes: what the previous release
    /// writes (a license, a mail, without the new columns) still goes in and reads back.
    @Test(arguments: StorageBackend.available)
    func thePreviousReleasesWritesKeepWorkingOnTheMigratedDatabase(_ backend: StorageBackend) async throws {
        let database = try await backend.open(migrations: Array(Migration.all.prefix { $0.name != Migration.reminders.name }))
        do {
            #expect(try await database.migrate(logger: Harness.logger) == Migration.all.drop { $0.name != Migration.reminders.name }.map(\.name))
            try await database.sql.raw("INSERT INTO tenants (id, name, created_at) VALUES ('acme', 'Acme', 1)").run()
            // The previous release's statement, word for word.
            try await database.sql.raw("""
                INSERT INTO mail_outbox (id, tenant_id, kind, license_id, to_address, status, attempts, next_attempt_at, locked_until, created_at)
                VALUES ('m1', 'acme', 'license', 'l1', 'a@example.com', 'pending', 0, 1, 0, 1)
                """).run()
            let claimed = try await database.claimDueMails(now: 2, limit: 10, lease: 60)
            #expect(claimed.map(\.id) == ["m1"] && claimed.first?.daysBefore == nil)
            #expect(try await database.reminderPlans().map(\.tenantId) == ["acme"])
        } catch {
            await database.close()
            throw error
        }
        await database.close()
    }
}
