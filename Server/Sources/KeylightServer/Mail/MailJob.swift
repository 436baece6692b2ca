import Foundation

/// One mail in the outbox: which mail, to whom, and how its sending has gone. It never holds
/// the key or the body; the mail is rendered from the license when it is sent.
public struct MailJob: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// A license's key, to its buyer (minted with `send_email`, from a payment, or resent).
        case license
        /// Every license of the tenant under an address ("Lost your key?" in the portal).
        case lostKeys = "lost_keys"
        /// A sign-in link to the buyer's account in the portal (15 minutes, used once).
        case accountLink = "account_link"
        /// The license ends soon (a reminder threshold, `daysBefore`, was reached). Never the key.
        case expiryReminder = "expiry_reminder"
        /// The license's updates end soon, as above.
        case updatesReminder = "updates_reminder"
        /// An invitation to a tenant's team in the dashboard (`licenseId` holds the invitation's id).
        case teamInvitation = "team_invitation"
    }

    public enum Status: String, Codable, Sendable {
        case pending, sent, failed
        /// Nothing to send when it was due (a lost-key mail for an address with no license).
        case skipped
    }

    public var id: String
    public var tenantId: String
    public var kind: Kind
    public var licenseId: String?
    public var toAddress: String
    public var status: Status
    public var attempts: Int
    public var nextAttemptAt: Int64
    public var lastError: String?
    public var createdAt: Int64
    public var finishedAt: Int64?
    /// Only on reminders: the threshold reached (days before the date).
    public var daysBefore: Int?

    enum CodingKeys: String, CodingKey {
        case id, kind, status, attempts
        case tenantId = "tenant_id", licenseId = "license_id", toAddress = "to_address", nextAttemptAt = "next_attempt_at"
        case lastError = "last_error", createdAt = "created_at", finishedAt = "finished_at", daysBefore = "days_before"
    }
}

/// What to mail along with a change that mints a license, written in the same transaction.
struct MailRequest: Sendable {
    var kind: MailJob.Kind
    var to: String
}
