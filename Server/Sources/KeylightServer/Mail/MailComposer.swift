import Foundation
import KeylightCore

/// Turns an outbox row into the mail to send: the license (its key opened from its seal only
/// now), the tenant's templates, the sender. Nothing it makes is stored.
struct MailComposer: Sendable {
    let database: Database
    let sealer: SecretSealer
    /// The server's sender address; a tenant's sender name replaces its display name.
    let from: MailAddress
    /// Where the customer portal is, for links (`--public-url`); nil: no links.
    let publicURL: String?

    /// Why a mail cannot be made at all (not worth retrying).
    struct Unsendable: Error, CustomStringConvertible {
        let description: String
    }

    /// Nothing to mail: a lost-key request for an address with no license that can be mailed, or
    /// a reminder that no longer applies (the buyer opted out, the license was renewed or revoked).
    struct NothingToSend: Error {
        var reason = "no license to mail under this address"
    }

    func compose(_ job: MailJob, now: Int64, random: inout some RandomNumberGenerator) async throws -> MailMessage {
        let settings = try await database.mailSettings(tenantId: job.tenantId) ?? MailSettings()
        let tenantName = try await database.tenant(id: job.tenantId)?.name
        let sender = try MailAddress(from.address, displayName: settings.senderName ?? from.displayName ?? tenantName)
        let to: MailAddress
        do {
            to = try MailAddress(job.toAddress)
        } catch {
            throw Unsendable(description: "the address cannot receive mail: \(error)")
        }
        let replyTo = try settings.replyTo.map { try MailAddress(parsing: $0) }
        var context: [String: Any] = ["tenant_name": tenantName ?? job.tenantId, "customer_email": job.toAddress, "sender_name": sender.displayName ?? ""]
        let subject: String, text: String, html: String
        var listUnsubscribe: String?
        switch job.kind {
        case .license:
            guard let licenseId = job.licenseId, let item = try await mailItem(licenseId: licenseId) else {
                throw Unsendable(description: "the license's key is not kept (minted before keys were sealed): remint it")
            }
            context.merge(item) { $1 }
            (subject, text, html) = try MailTemplates.renderLicenseMail(settings, context)
        case .lostKeys:
            var items: [[String: Any]] = []
            for license in try await database.mailableLicenses(tenantId: job.tenantId, email: job.toAddress) {
                if let item = try await mailItem(licenseId: license.id) { items.append(item) }
            }
            guard !items.isEmpty else { throw NothingToSend() }
            context["licenses"] = items
            subject = try MailTemplates.render(MailTemplates.lostSubject, context, html: false)
            text = try MailTemplates.render(MailTemplates.lostText, context, html: false)
            html = try MailTemplates.render(MailTemplates.lostHTML, context, html: true)
        case .accountLink:
            guard let publicURL else { throw Unsendable(description: "sign-in links need --public-url") }
            guard !(try await database.accountLicenses(tenantId: job.tenantId, email: job.toAddress, limit: 1)).isEmpty,
                  let sealed = try await database.signInLinkToken(tenantId: job.tenantId, email: job.toAddress, now: now) else { throw NothingToSend() }
            let token = String(decoding: try sealer.open(sealed, context: AccountSignIn.sealContext(tenantId: job.tenantId, email: job.toAddress)), as: UTF8.self)
            context["sign_in_url"] = "\(publicURL)/portal/\(job.tenantId)/account/sign-in?token=\(token)"
            subject = try MailTemplates.render(MailTemplates.accountSubject, context, html: false)
            text = try MailTemplates.render(MailTemplates.accountText, context, html: false)
            html = try MailTemplates.render(MailTemplates.accountHTML, context, html: true)
        case .teamInvitation:
            guard let publicURL else { throw Unsendable(description: "invitations need --public-url") }
            guard let id = job.licenseId, let sealed = try await database.invitationSealedToken(id: id, now: now) else {
                throw NothingToSend(reason: "the invitation was accepted, revoked or expired")
            }
            let token = String(decoding: try sealer.open(sealed, context: TeamInvitations.sealContext(id: id)), as: UTF8.self)
            context["invite_url"] = "\(publicURL)/dashboard/invite/\(token)"
            subject = try MailTemplates.render(MailTemplates.invitationSubject, context, html: false)
            text = try MailTemplates.render(MailTemplates.invitationText, context, html: false)
            html = try MailTemplates.render(MailTemplates.invitationHTML, context, html: true)
        case .expiryReminder, .updatesReminder:
            let reminder = try await reminderItem(job, now: now)
            context.merge(reminder.item) { $1 }
            listUnsubscribe = reminder.unsubscribeURL
            (subject, text, html) = try MailTemplates.renderReminderMail(context, settings: try await database.reminderSettings(tenantId: job.tenantId))
        }
        return MailMessage(
            from: sender, to: to, replyTo: replyTo, subject: subject, text: text, html: html,
            messageId: MailMessage.newMessageId(from: sender, using: &random), date: Date(timeIntervalSince1970: TimeInterval(now)),
            listUnsubscribe: listUnsubscribe
        )
    }

    /// A license's fields for a template, its key opened from the seal; nil when it has none.
    private func mailItem(licenseId: String) async throws -> [String: Any]? {
        guard let sealed = try await database.sealedKey(licenseId: licenseId),
              let license = try await database.license(id: licenseId) else { return nil }
        let key = try LicenseKeySeal.open(sealed, licenseId: licenseId, with: sealer)
        let product = try await database.product(tenantId: license.tenantId, id: license.productId)
        let keyType = try await database.keyType(tenantId: license.tenantId, productId: license.productId, id: license.keyTypeId)
        var item: [String: Any] = ["license_key": key, "product_name": product?.name ?? license.productId]
        // Only values that are there: swift-mustache shows a section for an empty string.
        if let name = keyType?.displayName, !name.isEmpty { item["key_type_name"] = name }
        // The customer portal of the license's product (only where it is switched on).
        if let publicURL, product?.portalEnabled ?? false { item["portal_url"] = "\(publicURL)/portal/\(license.tenantId)/\(license.productId)" }
        if let expiresAt = license.expiresAt {
            item["expires"] = Date(timeIntervalSince1970: TimeInterval(expiresAt)).formatted(.iso8601.year().month().day())
        }
        return item
    }
}
