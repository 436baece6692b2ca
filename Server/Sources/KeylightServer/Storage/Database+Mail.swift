import Foundation
import SQLKit

extension Database {
    static let mailColumns: SQLQueryString = "id, tenant_id, kind, license_id, to_address, status, attempts, next_attempt_at, last_error, created_at, finished_at, days_before"

    /// Only the kinds this build can send or show: a later release's processes, sharing the
    /// database during a rolling upgrade, may queue kinds this one does not know (release 63ae57f
    /// could not read such a row, so one of them stalled all of its sending; now they are left
    /// to the processes that know them).
    static var knownMailKinds: SQLQueryString { "kind IN (\(binds: MailJob.Kind.allCases.map(\.rawValue)))" }

    /// Queues a mail inside the caller's transaction (it commits, or is rolled back, with the
    /// change it announces).
    /// `daysBefore`: a reminder's threshold.
    static func enqueueMail(_ db: any SQLDatabase, tenantId: String, kind: MailJob.Kind, licenseId: String?, to: String, at now: Int64, daysBefore: Int? = nil) async throws {
        try await db.raw("""
            INSERT INTO mail_outbox (id, tenant_id, kind, license_id, to_address, status, attempts, next_attempt_at, locked_until, created_at, days_before)
            VALUES (\(bind: UUID().uuidString.lowercased()), \(bind: tenantId), \(bind: kind.rawValue), \(bind: licenseId), \(bind: to), 'pending', 0, \(bind: now), 0, \(bind: now),
                    \(bind: daysBefore))
            """).run()
    }

    /// Queues a license's key mail again (a resend), audited.
    func enqueueLicenseMail(tenantId: String, licenseId: String, to: String, now: Int64, actor: AuditActor) async throws {
        try await write { db in
            try await Self.enqueueMail(db, tenantId: tenantId, kind: .license, licenseId: licenseId, to: to, at: now)
            try await Self.record(
                ChangeLog(tenantId: tenantId, now: now).keyMailed(licenseId, actor: actor, kind: MailJob.Kind.license.rawValue), on: db, outbox: nil
            )
        }
    }

    /// Queues a "Lost your key?" mail to `to`. Not audited (the address comes from anybody on the
    /// portal); the mail lists the licenses when it is sent, and is dropped then if there are none.
    func enqueueLostKeysMail(tenantId: String, to: String, now: Int64) async throws {
        try await write { db in
            try await Self.enqueueMail(db, tenantId: tenantId, kind: .lostKeys, licenseId: nil, to: to, at: now)
        }
    }

    /// Nothing to send (a lost-key mail for an address without licenses): closed without a mail.
    func skipMail(id: String, reason: String, now: Int64) async throws {
        try await write { db in
            try await db.raw("""
                UPDATE mail_outbox SET status = 'skipped', finished_at = \(bind: now), locked_until = 0, last_error = \(bind: reason)
                WHERE id = \(bind: id) AND status = 'pending'
                """).run()
        }
    }

    /// Deletes finished mails that belong to no license (lost-key requests, sign-in links,
    /// invitations) older than `finishedBefore`; answers how many. A license's mails stay on its page.
    @discardableResult
    func purgeLostKeyMails(finishedBefore: Int64) async throws -> Int {
        try await write { db in
            try await db.raw("""
                DELETE FROM mail_outbox WHERE kind IN ('lost_keys', 'account_link', 'team_invitation') AND status <> 'pending' AND finished_at < \(bind: finishedBefore)
                RETURNING id
                """).all().count
        }
    }

    /// Takes up to `limit` due mails for `lease` seconds and counts the attempt. Where the
    /// database has row locks (PostgreSQL) rows another process is taking are skipped
    /// (`FOR UPDATE SKIP LOCKED`), and the conditions are checked again on the row written, so
    /// two processes never take one mail; a process that dies mid-send loses only the lease.
    func claimDueMails(now: Int64, limit: Int, lease: Int64) async throws -> [MailJob] {
        let skipLocked = SQLQueryString(capabilities.rowLockClause.map { " \($0) SKIP LOCKED" } ?? "")
        return try await write { db in
            try await db.raw("""
                UPDATE mail_outbox SET locked_until = \(bind: now + lease), attempts = attempts + 1
                WHERE id IN (
                    SELECT id FROM mail_outbox
                    WHERE status = 'pending' AND next_attempt_at <= \(bind: now) AND locked_until <= \(bind: now) AND \(Self.knownMailKinds)
                    ORDER BY next_attempt_at, id LIMIT \(literal: limit)\(skipLocked)
                ) AND status = 'pending' AND locked_until <= \(bind: now)
                RETURNING \(Self.mailColumns)
                """).all(decoding: MailJob.self)
        }
    }

    /// The mail is the SMTP server's (it answered 250): marked first, before anything else can fail.
    func markMailSent(id: String, now: Int64) async throws {
        try await write { db in
            try await db.raw("UPDATE mail_outbox SET status = 'sent', finished_at = \(bind: now), last_error = NULL, locked_until = 0 WHERE id = \(bind: id)").run()
        }
    }

    /// Tries again at `next`.
    func retryMail(id: String, error: String, next: Int64) async throws {
        try await write { db in
            try await db.raw("""
                UPDATE mail_outbox SET next_attempt_at = \(bind: next), locked_until = 0, last_error = \(bind: String(error.prefix(500)))
                WHERE id = \(bind: id) AND status = 'pending'
                """).run()
        }
    }

    /// Gives up: marked failed and audited.
    func failMail(_ job: MailJob, error: String, now: Int64) async throws {
        try await write { db in
            try await db.raw("""
                UPDATE mail_outbox SET status = 'failed', finished_at = \(bind: now), locked_until = 0, last_error = \(bind: String(error.prefix(500)))
                WHERE id = \(bind: job.id) AND status = 'pending'
                """).run()
            try await Self.audit(db, at: now, actor: .system, action: "mail.failed", tenantId: job.tenantId, target: job.licenseId ?? job.id, details: [
                "mail_id": job.id, "kind": job.kind.rawValue, "attempts": String(job.attempts), "error": String(error.prefix(200)),
            ])
        }
    }

    /// A license's mails, newest first (the license page).
    public func mails(licenseId: String, limit: Int = 20) async throws -> [MailJob] {
        try await sql.raw("SELECT \(Self.mailColumns) FROM mail_outbox WHERE license_id = \(bind: licenseId) AND \(Self.knownMailKinds) ORDER BY created_at DESC, id DESC LIMIT \(literal: limit)")
            .all(decoding: MailJob.self)
    }

    /// Every mail of a tenant still waiting (tests, the dashboard).
    func pendingMails(tenantId: String) async throws -> [MailJob] {
        try await sql.raw("SELECT \(Self.mailColumns) FROM mail_outbox WHERE tenant_id = \(bind: tenantId) AND status = 'pending' AND \(Self.knownMailKinds) ORDER BY created_at, id")
            .all(decoding: MailJob.self)
    }

    /// A license's sealed key (nil for licenses minted before keys were kept).
    func sealedKey(licenseId: String) async throws -> String? {
        try await sql.raw("SELECT sealed_key FROM licenses WHERE id = \(bind: licenseId)").first(decodingColumn: "sealed_key", as: String?.self) ?? nil
    }

    /// The tenant's licenses under `email` that can be mailed (their key is kept sealed), oldest first.
    func mailableLicenses(tenantId: String, email: String, limit: Int = 50) async throws -> [License] {
        try await sql.raw("""
            SELECT \(Self.licenseColumns) FROM licenses
            WHERE tenant_id = \(bind: tenantId) AND customer_email = \(bind: email) AND sealed_key IS NOT NULL AND status <> 'revoked'
            ORDER BY created_at, id LIMIT \(literal: limit)
            """).all(decoding: License.self)
    }
}

extension Database {
    func license(id: String) async throws -> License? {
        try await sql.raw("SELECT \(Self.licenseColumns) FROM licenses WHERE id = \(bind: id)").first(decoding: License.self)
    }

    /// Replaces a license's customer address (a resend to a corrected address), audited.
    func setCustomerEmail(licenseId: String, tenantId: String, to email: String, now: Int64, actor: AuditActor) async throws -> License? {
        try await write { db in
            let previous = try await db.raw("SELECT customer_email FROM licenses WHERE id = \(bind: licenseId) AND tenant_id = \(bind: tenantId)")
                .first(decodingColumn: "customer_email", as: String?.self) ?? nil
            let license = try await db.raw("""
                UPDATE licenses SET customer_email = \(bind: email), updated_at = \(bind: now)
                WHERE id = \(bind: licenseId) AND tenant_id = \(bind: tenantId) RETURNING \(Self.licenseColumns)
                """).first(decoding: License.self)
            if license != nil {
                try await Self.record(ChangeLog(tenantId: tenantId, now: now).buyerAddressSet(licenseId, actor: actor, details: [
                    "from": previous ?? "", "to": email,
                ]), on: db, outbox: nil)
            }
            return license
        }
    }

    /// The tenant's mail settings (nil: all defaults).
    func mailSettings(tenantId: String) async throws -> MailSettings? {
        try await sql.raw("""
            SELECT sender_name, reply_to, subject_template, text_template, html_template FROM mail_settings WHERE tenant_id = \(bind: tenantId)
            """).first(decoding: MailSettings.self)
    }

    /// Replaces the tenant's mail settings, audited.
    func putMailSettings(_ settings: MailSettings, tenantId: String, now: Int64, actor: AuditActor) async throws {
        try await write { db in
            try await db.raw("DELETE FROM mail_settings WHERE tenant_id = \(bind: tenantId)").run()
            try await db.raw("""
                INSERT INTO mail_settings (tenant_id, sender_name, reply_to, subject_template, text_template, html_template, updated_at)
                VALUES (\(bind: tenantId), \(bind: settings.senderName), \(bind: settings.replyTo), \(bind: settings.subjectTemplate),
                        \(bind: settings.textTemplate), \(bind: settings.htmlTemplate), \(bind: now))
                """).run()
            try await Self.audit(db, at: now, actor: actor, action: "mail_settings.update", tenantId: tenantId, target: tenantId)
        }
    }
}
