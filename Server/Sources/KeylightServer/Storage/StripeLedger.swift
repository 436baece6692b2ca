import Foundation
import KeylightCore
import SQLKit

/// The reads and writes that applying one Stripe event may make, all inside the transaction
/// that records the event (``Database/recordStripeEvent(_:tenantId:now:sealEvent:retriedBy:apply:)``).
/// What to do is decided by ``StripeEventRules``; this type only knows the tables.
struct StripeLedger: Sendable {
    let db: any SQLDatabase
    let tenantId: String
    let now: Int64
    /// The event being applied, named in audit entries.
    let eventId: String
    let outbox: WebhookOutbox?
    let actor = AuditActor("stripe")
    /// ` FOR UPDATE` where the database locks rows: a paid change locks the license it changes.
    var rowLock: SQLQueryString = ""

    /// Paid changes to licenses already sold (upgrades, renewals, seats), in this event's transaction.
    var paidChanges: PaidChangeLedger {
        PaidChangeLedger(db: db, tenantId: tenantId, provider: .stripe, now: now, eventId: eventId, outbox: outbox, actor: actor, lock: rowLock)
    }
    /// Where the audit entries and outbound events of this event's changes go.
    var changeLog: ChangeLog { ChangeLog(tenantId: tenantId, now: now) }

    /// Writes `entry` in this event's transaction.
    func record(_ entry: ChangeLog.Entry) async throws {
        try await Database.record(entry, on: db, outbox: outbox)
    }

    // MARK: Checkout sessions

    /// Notes what an event says of a session. A settled status (`paid`, `failed`) is not undone
    /// by a late repeat of an earlier event; a failure always stands, and drops any key still
    /// waiting to be picked up.
    func recordSession(_ sessionId: String, successOrigin: String?, paymentStatus: String?) async throws {
        try await db.raw("""
            INSERT INTO checkout_sessions (tenant_id, id, success_origin, payment_status, created_at)
            VALUES (\(bind: tenantId), \(bind: sessionId), \(bind: successOrigin), \(bind: paymentStatus), \(bind: now))
            ON CONFLICT (tenant_id, id) DO UPDATE SET
                payment_status = CASE WHEN excluded.payment_status = 'failed' THEN 'failed'
                                      WHEN checkout_sessions.payment_status IN ('paid', 'failed') THEN checkout_sessions.payment_status
                                      ELSE excluded.payment_status END,
                sealed_license_key = CASE WHEN excluded.payment_status = 'failed' THEN NULL ELSE checkout_sessions.sealed_license_key END,
                success_origin = COALESCE(checkout_sessions.success_origin, excluded.success_origin)
            """).run()
    }

    /// Claims a session for one license: false when another event or process minted first.
    func claimSession(_ sessionId: String, licenseId: String, sealedKey: String) async throws -> Bool {
        try await db.raw("""
            UPDATE checkout_sessions SET license_id = \(bind: licenseId), sealed_license_key = \(bind: sealedKey), minted_at = \(bind: now), payment_status = 'paid'
            WHERE tenant_id = \(bind: tenantId) AND id = \(bind: sessionId) AND license_id IS NULL
            RETURNING id
            """).first() != nil
    }

    /// The license a session minted, if any.
    func mintedLicense(session sessionId: String) async throws -> String? {
        try await db.raw("SELECT license_id FROM checkout_sessions WHERE tenant_id = \(bind: tenantId) AND id = \(bind: sessionId)")
            .first(decodingColumn: "license_id", as: String?.self) ?? nil
    }

    // MARK: Catalogue and licenses

    /// The key type and its product's key prefix; nil when either does not exist.
    func keyType(productId: String, keyTypeId: String) async throws -> (KeyType, prefix: String)? {
        guard let keyType = try await db.raw("""
                  SELECT \(Database.keyTypeColumns) FROM key_types
                  WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND id = \(bind: keyTypeId)
                  """).first(decoding: KeyType.self),
              let prefix = try await db.raw("SELECT key_prefix FROM products WHERE tenant_id = \(bind: tenantId) AND id = \(bind: productId)")
                  .first(decodingColumn: "key_prefix", as: String.self) else { return nil }
        return (keyType, prefix)
    }

    /// Inserts a minted license with the Stripe ids it came from, audited and announced.
    func insertLicense(
        _ license: License, key: LicenseKey, sealedKey: String, mail: MailRequest?, customer: String?, paymentIntent: String?, subscription: String?, details: [String: String]
    ) async throws {
        try await db.raw("""
            INSERT INTO licenses (\(Database.licenseColumns), stripe_customer_id, stripe_payment_intent_id, stripe_subscription_id, sealed_key)
            VALUES (\(Database.licenseValues(license)), \(bind: customer), \(bind: paymentIntent), \(bind: subscription), \(bind: sealedKey))
            """).run()
        if let mail {
            try await Database.enqueueMail(db, tenantId: tenantId, kind: mail.kind, licenseId: license.id, to: mail.to, at: now)
        }
        try await record(changeLog.licenseCreated(license, key: key.text, actor: actor, details: details.merging(["event": eventId]) { $1 }))
    }

    /// Which licenses a revocation reaches.
    enum LicenseSelection: Sendable {
        case id(String)
        case paymentIntent(String)
    }

    /// Revokes the tenant's licenses `selection` names that are not revoked yet, audited and
    /// announced with `reason`; answers whether there were any.
    func revoke(_ selection: LicenseSelection, reason: String) async throws -> Bool {
        let condition: SQLQueryString = switch selection {
        case .id(let id): "id = \(bind: id)"
        case .paymentIntent(let intent): "stripe_payment_intent_id = \(bind: intent)"
        }
        let licenses = try await db.raw("""
            UPDATE licenses SET status = 'revoked', updated_at = \(bind: now)
            WHERE tenant_id = \(bind: tenantId) AND status <> 'revoked' AND \(condition) RETURNING \(Database.licenseColumns)
            """).all(decoding: License.self)
        for license in licenses {
            try await record(changeLog.licenseRevoked(license, actor: actor, details: ["event": eventId, "reason": reason]))
        }
        return !licenses.isEmpty
    }

    /// The subscriptions Stripe has told of, and their licenses.
    var subscriptions: SubscriptionBook {
        SubscriptionBook(db: db, tenantId: tenantId, now: now, eventId: eventId, outbox: outbox, actor: actor, kind: .stripe)
    }
}
