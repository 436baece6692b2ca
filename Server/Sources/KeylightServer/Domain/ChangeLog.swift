/// What a change to a license or an instance leaves behind: its audit entry and its outbound
/// event. Decided here, once for every path (SDK, portal, offline files, admin, Stripe, merchants,
/// App Store), as values; storage writes them in the transaction that made the change
/// (``Database/record(_:on:outbox:)``), so the log, the event and the change commit together.
struct ChangeLog: Sendable {
    let tenantId: String
    let now: Int64

    /// One change's record: an audit entry, an outbound event, or both.
    struct Entry: Sendable {
        var tenantId: String
        var at: Int64
        var audit: Audit?
        var event: WebhookEvent?
    }

    /// An audit log line: who did what to which license (or other target), and details.
    struct Audit: Sendable {
        var actor: AuditActor
        var action: String
        var target: String
        var details: [String: String]
    }

    // MARK: Instances

    /// A new instance took a seat. The app's own activations are not audited (the event and the
    /// usage counts record them; a busy app would flood the log); every other route is.
    func instanceActivated(id: String, name: String, license: License, change: InstanceChange) -> Entry {
        entry(
            audit: change.how == .app ? nil : Audit(actor: change.actor, action: "instance.activate", target: license.id, details: ["instance_id": id, "how": change.how.rawValue]),
            event: WebhookEvent(type: .instanceActivated, tenantId: tenantId, at: now, data: .init(
                license: license, instance: WebhookInstance(id: id, name: name, activated_at: now, deactivated_at: nil),
                source: change.source, how: change.how.rawValue
            ))
        )
    }

    /// An instance gave up its seat: deactivated (`change` says by whom), or a floating seat freed
    /// because its device went silent (``InstanceChange/heartbeatMissed``). `license` is the row
    /// after the change; without it only the audit entry is written.
    func instanceReleased(_ instance: Instance, licenseId: String, license: License?, change: InstanceChange) -> Entry {
        let expired = change.how == .heartbeatMissed
        return entry(
            audit: Audit(actor: change.actor, action: expired ? "instance.expire" : "instance.deactivate", target: licenseId, details: [
                "instance_id": instance.id, "how": change.how.rawValue,
            ]),
            event: license.map { license in
                WebhookEvent(type: expired ? .instanceExpired : .instanceDeactivated, tenantId: tenantId, at: now, data: .init(
                    license: license, instance: WebhookInstance(id: instance.id, name: instance.name, activated_at: instance.activatedAt, deactivated_at: now),
                    source: change.source, how: change.how.rawValue
                ))
            }
        )
    }

    /// Every seat was in use when a device asked: `license.activation_limit_reached`, which the
    /// caller sends at most once an hour per license. Not audited: nothing changed.
    func activationLimitReached(license: License, activationLimit: Int, refusedName: String) -> Entry {
        entry(audit: nil, event: WebhookEvent(type: .activationLimitReached, tenantId: tenantId, at: now, data: .init(
            license: license, activationLimit: activationLimit, refusedInstanceName: refusedName
        )))
    }

    // MARK: Licenses

    /// A license was minted: `license.create` with `details`, and `license.created` carrying the
    /// raw key (the only place it leaves the server after minting).
    func licenseCreated(_ license: License, key: String, actor: AuditActor, details: [String: String]) -> Entry {
        entry(
            audit: Audit(actor: actor, action: "license.create", target: license.id, details: details),
            event: WebhookEvent(type: .licenseCreated, tenantId: tenantId, at: now, data: .init(license: license, licenseKey: key, source: actor.name))
        )
    }

    /// An administrator set a license's status (`action`: suspend, reinstate, revoke); only a
    /// revocation is announced (`license.revoked`).
    func statusSet(_ license: License, action: String, actor: AuditActor) -> Entry {
        entry(
            audit: Audit(actor: actor, action: action, target: license.id, details: ["status": license.status.rawValue]),
            event: license.status == .revoked ? WebhookEvent(type: .licenseRevoked, tenantId: tenantId, at: now, data: .init(license: license, source: actor.name)) : nil
        )
    }

    /// A payment was taken back (refund, chargeback, revocation): `license.revoke` and `license.revoked`.
    func licenseRevoked(_ license: License, actor: AuditActor, details: [String: String]) -> Entry {
        entry(
            audit: Audit(actor: actor, action: "license.revoke", target: license.id, details: details),
            event: WebhookEvent(type: .licenseRevoked, tenantId: tenantId, at: now, data: .init(license: license, source: actor.name))
        )
    }

    /// A subscription moved a license's expiry: later once paid (`license.renew`, `license.renewed`),
    /// or to its end (`license.expire`, `license.expired`).
    func expiryMoved(_ license: License, renewed: Bool, actor: AuditActor, details: [String: String]) -> Entry {
        entry(
            audit: Audit(actor: actor, action: renewed ? "license.renew" : "license.expire", target: license.id, details: details),
            event: WebhookEvent(type: renewed ? .licenseRenewed : .licenseExpired, tenantId: tenantId, at: now, data: .init(license: license, source: actor.name))
        )
    }

    /// An administrator (or a bulk job, or a payment applied to a license) edited a license:
    /// `license.update` and `license.updated`, or `license.renew` and `license.renewed` when the
    /// edit renewed a date; the event carries what changed, as `changes: {field: [from, to]}`.
    func licenseEdited(_ license: License, changes: [String: [String]], renewed: Bool, actor: AuditActor, details: [String: String]) -> Entry {
        var data = WebhookEventData(license: license, source: actor.name)
        data.changes = changes
        return entry(
            audit: Audit(actor: actor, action: renewed ? "license.renew" : "license.update", target: license.id, details: details),
            event: WebhookEvent(type: renewed ? .licenseRenewed : .licenseUpdated, tenantId: tenantId, at: now, data: data)
        )
    }

    /// One of the tenant's reminder thresholds was reached: `license.expiring_soon` or
    /// `license.updates_expiring_soon`, with the threshold and the date. Not audited: nothing
    /// changed (`license_reminders` keeps what was sent, and when).
    func reminderDue(_ license: License, kind: ReminderKind, daysBefore: Int, date: Int64) -> Entry {
        var data = WebhookEventData(license: license, source: AuditActor.system.name)
        data.days_before = daysBefore
        data.date = date
        return entry(audit: nil, event: WebhookEvent(type: kind.eventType, tenantId: tenantId, at: now, data: data))
    }

    // Changes that are audited but not announced.

    /// The license's key was replaced (`license.remint`); the old key stops working.
    func keyReplaced(_ licenseId: String, maskedKey: String, actor: AuditActor) -> Entry {
        audited(licenseId, "license.remint", actor, ["masked_key": maskedKey])
    }

    /// A refund was taken back: the license it revoked is active again (`license.reinstate`).
    func reinstated(_ licenseId: String, actor: AuditActor, details: [String: String]) -> Entry {
        audited(licenseId, "license.reinstate", actor, details)
    }

    /// The buyer's address was set or learnt (`license.customer_email`).
    func buyerAddressSet(_ licenseId: String, actor: AuditActor, details: [String: String]) -> Entry {
        audited(licenseId, "license.customer_email", actor, details)
    }

    /// The buyer picked the key up on Checkout's success page (`license.pick_up`).
    func keyPickedUp(_ licenseId: String, checkoutSession: String) -> Entry {
        audited(licenseId, "license.pick_up", AuditActor("checkout"), ["checkout_session": checkoutSession])
    }

    /// The key's mail was queued again (`license.email`).
    func keyMailed(_ licenseId: String, actor: AuditActor, kind: String) -> Entry {
        audited(licenseId, "license.email", actor, ["kind": kind])
    }

    /// A bulk job was started on `productId`'s licenses (`license.bulk`); each license it changes
    /// is audited on its own as it is changed.
    func bulkJobStarted(productId: String, actor: AuditActor, details: [String: String]) -> Entry {
        audited(productId, "license.bulk", actor, details)
    }

    /// The buyer asked for no more reminder mails about the license, from a mail's one-click link
    /// (`license.reminders_unsubscribe`; webhooks to the developer go on).
    func remindersUnsubscribed(_ licenseId: String) -> Entry {
        audited(licenseId, "license.reminders_unsubscribe", .customer, [:])
    }

    /// Licenses were imported into `productId`, `count` of them, audited once (`license.import`).
    func licensesImported(productId: String, count: Int, actor: AuditActor) -> Entry {
        audited(productId, "license.import", actor, ["count": "\(count)"])
    }

    private func audited(_ target: String, _ action: String, _ actor: AuditActor, _ details: [String: String]) -> Entry {
        entry(audit: Audit(actor: actor, action: action, target: target, details: details), event: nil)
    }

    private func entry(audit: Audit?, event: WebhookEvent?) -> Entry {
        Entry(tenantId: tenantId, at: now, audit: audit, event: event)
    }
}
