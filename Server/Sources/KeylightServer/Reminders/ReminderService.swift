import Crypto
import Foundation
import KeylightCore
import Logging

/// One tenant's part of a sweep: its settings, and the reminder events its webhook endpoints take.
struct ReminderPlan: Sendable {
    var tenantId: String
    var settings: ReminderSettings
    var subscribed: Set<ReminderKind>
}

/// What a reminder's opt-out link names, for its page.
struct ReminderRecipient: Sendable {
    var license: License
    var productName: String
    var unsubscribed: Bool
}

/// Reminders before a license ends (`expires_at`) or its updates do (`updates_until`): the
/// `license.expiring_soon` and `license.updates_expiring_soon` webhooks and, where the tenant
/// asks for it, a mail to the buyer with a renewal link and a one-click opt-out.
///
/// ``sweep(batch:maxBatches:)`` runs periodically in every process. Each reminder is claimed in
/// `license_reminders` in the transaction that writes its event and mail
/// (``Database/remind(licenseId:kind:now:decide:)``), so however many processes sweep at once, and
/// across restarts, a license gets one per kind, threshold and date.
struct ReminderService: Sendable {
    let database: Database
    let clock: any WallClock
    /// The opt-out links' key, derived from the master key (``UnsubscribeToken``).
    let linkKey: SymmetricKey
    /// `--public-url`: a reminder mail's links start with it. Without it no reminder is mailed (a
    /// mail the buyer cannot opt out of is not sent); webhooks go on.
    let publicURL: String?
    /// SMTP is configured.
    let mailConfigured: Bool
    var logger = Logger(label: "keylight.reminders")

    init(database: Database, clock: any WallClock, sealer: SecretSealer, publicURL: String?, mailConfigured: Bool) {
        self.database = database
        self.clock = clock
        self.linkKey = sealer.derivedKey(for: UnsubscribeToken.purpose)
        self.publicURL = publicURL
        self.mailConfigured = mailConfigured
    }

    /// Whether this server can mail reminders at all.
    var mailsBuyers: Bool { mailConfigured && publicURL != nil }

    // MARK: The sweep

    /// Sends every reminder due now: per tenant and kind (skipped when nobody would hear of it:
    /// no endpoint takes the event and buyers are not mailed), `batch` licenses at a time, at most
    /// `maxBatches` batches per tenant and kind (a backlog, such as an import, continues on the
    /// next tick). Returns how many this call sent.
    @discardableResult
    func sweep(batch: Int = 100, maxBatches: Int = 20) async -> Int {
        let now = clock.unixSeconds
        let plans: [ReminderPlan]
        do {
            plans = try await database.reminderPlans()
        } catch {
            logger.debug("could not read reminder settings", metadata: ["error": "\(error)"])
            return 0
        }
        var sent = 0
        for plan in plans {
            let mails = plan.settings.mailBuyers && mailsBuyers
            for kind in ReminderKind.allCases where mails || plan.subscribed.contains(kind) {
                do {
                    sent += try await sweep(plan, kind: kind, mails: mails, now: now, batch: batch, maxBatches: maxBatches)
                } catch {
                    logger.debug("could not send reminders", metadata: ["tenant": .string(plan.tenantId), "kind": .string(kind.rawValue), "error": "\(error)"])
                }
            }
        }
        if sent > 0 { logger.debug("sent reminders", metadata: ["reminders": .stringConvertible(sent)]) }
        return sent
    }

    private func sweep(_ plan: ReminderPlan, kind: ReminderKind, mails: Bool, now: Int64, batch: Int, maxBatches: Int) async throws -> Int {
        let schedule = plan.settings.schedule
        // `quiet`: no mail to the buyer (opted out, or a subscription that renews itself).
        let decide: @Sendable (License, Bool) -> ReminderSend? = { license, quiet in
            guard let due = ReminderRules.due(license, kind: kind, schedule: schedule, now: now) else { return nil }
            return ReminderSend(
                threshold: due.threshold, passedOver: due.passedOver, date: due.date,
                entry: ChangeLog(tenantId: license.tenantId, now: now).reminderDue(license, kind: kind, daysBefore: due.threshold, date: due.date),
                // An address that cannot receive mail (a line break typed at checkout) gets none.
                mailTo: mails && !quiet ? license.customerEmail.flatMap { (try? MailAddress($0)) == nil ? nil : $0 } : nil
            )
        }
        var sent = 0
        for _ in 0..<maxBatches {
            let ids = try await database.licensesDueReminders(tenantId: plan.tenantId, kind: kind, schedule: schedule, now: now, limit: batch)
            for id in ids {
                if try await database.remind(licenseId: id, kind: kind, now: now, decide: decide) { sent += 1 }
            }
            if ids.count < batch { break }
        }
        return sent
    }

    // MARK: Opting out

    /// The opt-out link of a reminder mail about `licenseId`, made now.
    func unsubscribeURL(licenseId: String) -> String? {
        publicURL.map { UnsubscribeToken.link(publicURL: $0, licenseId: licenseId, now: clock.unixSeconds, key: linkKey) }
    }

    /// The license a link's token names (its page shows the masked key and the product).
    func recipient(token: String) async throws -> ReminderRecipient {
        let token = try verified(token)
        guard let (license, unsubscribedAt) = try await database.reminderRecipient(licenseId: token.licenseId) else { throw UnsubscribeToken.Refusal.invalid }
        let product = try await database.product(tenantId: license.tenantId, id: license.productId)
        return ReminderRecipient(license: license, productName: product?.name ?? license.productId, unsubscribed: unsubscribedAt != nil)
    }

    /// Turns the license's reminder mails off (idempotent, audited once).
    func unsubscribe(token: String) async throws -> ReminderRecipient {
        let token = try verified(token)
        let license: License
        switch try await database.unsubscribeFromReminders(licenseId: token.licenseId, now: clock.unixSeconds) {
        case .unsubscribed(let found), .alreadyUnsubscribed(let found): license = found
        case .notFound: throw UnsubscribeToken.Refusal.invalid
        }
        let product = try await database.product(tenantId: license.tenantId, id: license.productId)
        return ReminderRecipient(license: license, productName: product?.name ?? license.productId, unsubscribed: true)
    }

    private func verified(_ token: String) throws(UnsubscribeToken.Refusal) -> UnsubscribeToken {
        try UnsubscribeToken.verify(token, key: linkKey, now: clock.unixSeconds).get()
    }
}
