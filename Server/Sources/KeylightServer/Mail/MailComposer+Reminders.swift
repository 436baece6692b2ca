import Foundation
import KeylightCore

extension MailComposer {
    /// A reminder's fields for its template, and its opt-out link. The license is read again when
    /// the mail is sent, and the mail is dropped (``NothingToSend``) if it no longer applies: the
    /// buyer opted out, the license is no longer active, or its date moved or passed since the
    /// reminder was claimed. The license is named by its masked key: a reminder never carries the key.
    func reminderItem(_ job: MailJob, now: Int64) async throws -> (item: [String: Any], unsubscribeURL: String) {
        guard let kind = ReminderKind(mailKind: job.kind), let licenseId = job.licenseId, let days = job.daysBefore else {
            throw Unsendable(description: "the reminder names no license or threshold")
        }
        // Without the public URL there is no opt-out link to give, so no mail.
        guard let publicURL else { throw NothingToSend(reason: "reminders need --public-url for their opt-out link") }
        guard let (license, unsubscribedAt) = try await database.reminderRecipient(licenseId: licenseId) else {
            throw NothingToSend(reason: "the license no longer exists")
        }
        guard unsubscribedAt == nil else { throw NothingToSend(reason: "the buyer turned reminder mails off") }
        guard license.status == .active else { throw NothingToSend(reason: "the license is \(license.status.rawValue)") }
        let claimed = try await database.reminders(licenseId: licenseId).first { $0.kind == kind.rawValue && $0.days == days }
        guard let date = kind.date(of: license), date == claimed?.dueAt, date > now else {
            throw NothingToSend(reason: "the date changed or passed before the reminder was sent")
        }
        let product = try await database.product(tenantId: license.tenantId, id: license.productId)
        let keyType = try await database.keyType(tenantId: license.tenantId, productId: license.productId, id: license.keyTypeId)
        let unsubscribeURL = UnsubscribeToken.link(publicURL: publicURL, licenseId: licenseId, now: now, key: sealer.derivedKey(for: UnsubscribeToken.purpose))
        // What is left when the mail goes, in whole days rounded up: the threshold reached (7) is
        // not what is left for a license found late (minted 5 days before its end).
        let left = max(1, (date - now + 86_399) / 86_400)
        var item: [String: Any] = [
            "product_name": product?.name ?? license.productId, "masked_key": license.maskedKey,
            "days_before": days, "days": left == 1 ? "1 day" : "\(left) days",
            "date": Date(timeIntervalSince1970: TimeInterval(date)).formatted(.iso8601.year().month().day()),
            "renewal_url": "\(publicURL)/portal/\(license.tenantId)/account", "unsubscribe_url": unsubscribeURL,
            kind == .expires ? "expiry" : "updates": true,
        ]
        // Only values that are there: swift-mustache shows a section for an empty string.
        if let name = keyType?.displayName, !name.isEmpty { item["key_type_name"] = name }
        return (item, unsubscribeURL)
    }
}
