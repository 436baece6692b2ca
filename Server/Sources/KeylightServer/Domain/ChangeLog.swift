import SQLKit

/// What a change to a license or an instance leaves behind, written in the transaction that made
/// it: the audit entry and the outbound event (sealed into the webhook outbox). Storage hands it
/// the rows it changed; what is audited, what is announced and the event's shape are decided here,
/// once for every path (SDK, portal, offline files, admin, Stripe, merchants, App Store).
struct ChangeLog: Sendable {
    let db: any SQLDatabase
    let outbox: WebhookOutbox?
    let tenantId: String
    let now: Int64

    // MARK: Instances

    /// A new instance took a seat. The app's own activations are not audited (the event and the
    /// usage counts record them; a busy app would flood the log); every other route is.
    func instanceActivated(id: String, name: String, license: License, change: InstanceChange) async throws {
        if change.how != .app {
            try await audit(change.actor, "instance.activate", target: license.id, ["instance_id": id, "how": change.how.rawValue])
        }
        try await outbox.enqueue(WebhookEvent(type: .instanceActivated, tenantId: tenantId, at: now, data: .init(
            license: license, instance: WebhookInstance(id: id, name: name, activated_at: now, deactivated_at: nil),
            source: change.source, how: change.how.rawValue
        )), on: db)
    }

    /// An instance gave up its seat: deactivated (`change` says by whom), or a floating seat freed
    /// because its device went silent (``InstanceChange/heartbeatMissed``). `license` is the row
    /// after the change; without it only the audit entry is written.
    func instanceReleased(_ instance: Instance, licenseId: String, license: License?, change: InstanceChange) async throws {
        let expired = change.how == .heartbeatMissed
        try await audit(change.actor, expired ? "instance.expire" : "instance.deactivate", target: licenseId, [
            "instance_id": instance.id, "how": change.how.rawValue,
        ])
        guard let license else { return }
        try await outbox.enqueue(WebhookEvent(type: expired ? .instanceExpired : .instanceDeactivated, tenantId: tenantId, at: now, data: .init(
            license: license, instance: WebhookInstance(id: instance.id, name: instance.name, activated_at: instance.activatedAt, deactivated_at: now),
            source: change.source, how: change.how.rawValue
        )), on: db)
    }

    /// Every seat was in use when a device asked: `license.activation_limit_reached`, which the
    /// caller sends at most once an hour per license.
    func activationLimitReached(license: License, activationLimit: Int, refusedName: String) async throws {
        try await outbox.enqueue(WebhookEvent(type: .activationLimitReached, tenantId: tenantId, at: now, data: .init(
            license: license, activationLimit: activationLimit, refusedInstanceName: refusedName
        )), on: db)
    }

    // MARK: Licenses

    /// A license was minted: `license.create` with `details`, and `license.created` carrying the
    /// raw key (the only place it leaves the server after minting).
    func licenseCreated(_ license: License, key: String, actor: AuditActor, details: [String: String]) async throws {
        try await audit(actor, "license.create", target: license.id, details)
        try await outbox.enqueue(WebhookEvent(type: .licenseCreated, tenantId: tenantId, at: now, data: .init(license: license, licenseKey: key, source: actor.name)), on: db)
    }

    /// A license's status or expiry changed: `action` in the audit log, and `event` (when the
    /// change is one developers hear of) with the license as it is now.
    func licenseChanged(_ license: License, action: String, actor: AuditActor, details: [String: String], event: WebhookEventType?) async throws {
        try await audit(actor, action, target: license.id, details)
        if let event {
            try await outbox.enqueue(WebhookEvent(type: event, tenantId: tenantId, at: now, data: .init(license: license, source: actor.name)), on: db)
        }
    }

    private func audit(_ actor: AuditActor, _ action: String, target: String, _ details: [String: String]) async throws {
        try await Database.audit(db, at: now, actor: actor, action: action, tenantId: tenantId, target: target, details: details)
    }
}

extension Database {
    /// The change log of a transaction on `db`.
    func changeLog(_ db: any SQLDatabase, tenantId: String, at now: Int64) -> ChangeLog {
        ChangeLog(db: db, outbox: outbox, tenantId: tenantId, now: now)
    }
}
