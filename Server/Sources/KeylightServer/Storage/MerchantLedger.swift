import Foundation
import KeylightCore
import SQLKit

/// The reads and writes applying one merchant event may make, all inside the transaction that
/// records the event (``Database/recordMerchantEvent(_:provider:tenantId:now:sealEvent:retriedBy:apply:)``).
/// What to do is decided by ``MerchantEventRules``; this type only knows the tables. Every
/// statement names the tenant and the provider, so one payment seen by two tenants (or through
/// two providers) never reaches the other's licenses.
struct MerchantLedger: Sendable {
    let db: any SQLDatabase
    let tenantId: String
    let provider: MerchantProvider
    let now: Int64
    /// The event being applied, named in audit entries.
    let eventId: String
    let outbox: WebhookOutbox?
    /// ` FOR UPDATE OF merchant_orders` where the database locks rows (PostgreSQL); empty on SQLite,
    /// whose writers are serialised whole.
    var orderLock: SQLQueryString = ""
    /// ` FOR UPDATE` where the database locks rows: a paid change locks the license it changes.
    var rowLock: SQLQueryString = ""
    var actor: AuditActor { provider.actor }
    /// Where the audit entries and outbound events of this event's changes go.
    var changeLog: ChangeLog { ChangeLog(tenantId: tenantId, now: now) }

    /// Writes `entry` in this event's transaction.
    func record(_ entry: ChangeLog.Entry) async throws {
        try await Database.record(entry, on: db, outbox: outbox)
    }

    /// Paid changes to licenses already sold (upgrades, renewals, seats), in this event's transaction.
    var paidChanges: PaidChangeLedger {
        PaidChangeLedger(db: db, tenantId: tenantId, provider: KeyTypeOffer.Provider(provider), now: now, eventId: eventId, outbox: outbox, actor: actor, lock: rowLock)
    }

    // MARK: Catalogue

    /// The key type mapped to the provider's `mappingId`, and its product's key prefix.
    func keyType(mappingId: String) async throws -> (KeyType, prefix: String)? {
        guard let keyType = try await db.raw("""
                  SELECT \(Database.keyTypeColumns) FROM key_types
                  WHERE tenant_id = \(bind: tenantId) AND \(ident: provider.mappingField) = \(bind: mappingId)
                  """).first(decoding: KeyType.self),
              let prefix = try await db.raw("SELECT key_prefix FROM products WHERE tenant_id = \(bind: tenantId) AND id = \(bind: keyType.productId)")
                  .first(decodingColumn: "key_prefix", as: String.self) else { return nil }
        return (keyType, prefix)
    }

    // MARK: Orders

    enum OrderClaim: Sendable, Equatable {
        /// This event mints the order's licenses (and the subscription a later event tied it to, if any).
        case claimed(subscriptionId: String?)
        case alreadyMinted
        case refunded
    }

    /// Claims an order for minting: once per order, however many deliveries or processes race
    /// (a concurrent claim waits for this transaction, then finds the order taken).
    func claimOrder(_ orderId: String, licenses: Int) async throws -> OrderClaim {
        if let row = try await db.raw("""
            INSERT INTO merchant_orders (tenant_id, provider, id, status, licenses, subscription_id, created_at, updated_at)
            VALUES (\(bind: tenantId), \(bind: provider.rawValue), \(bind: orderId), 'minted', \(bind: licenses), NULL, \(bind: now), \(bind: now))
            ON CONFLICT (tenant_id, provider, id) DO UPDATE SET status = 'minted', licenses = excluded.licenses, updated_at = excluded.updated_at
            WHERE merchant_orders.status = 'pending'
            RETURNING subscription_id
            """).first() {
            return .claimed(subscriptionId: try row.decode(column: "subscription_id", as: String?.self))
        }
        let status = try await db.raw("""
            SELECT status FROM merchant_orders WHERE tenant_id = \(bind: tenantId) AND provider = \(bind: provider.rawValue) AND id = \(bind: orderId)
            """).first(decodingColumn: "status", as: String.self)
        return status == "refunded" ? .refunded : .alreadyMinted
    }

    /// What an order was before a refund reached it: a purchase (`minted`), a subscription's
    /// renewal payment (`renewal`, with its subscription), or nothing yet.
    struct RefundedOrder: Sendable, Equatable {
        var status: String?
        var subscriptionId: String?
    }

    /// Marks an order refunded, whether or not its payment has arrived (a purchase or renewal
    /// that comes later then grants nothing), and answers what it was. The row is locked first,
    /// so a payment being recorded at the same moment is either seen here or sees the refund.
    func recordRefund(_ orderId: String) async throws -> RefundedOrder {
        let key: SQLQueryString = "tenant_id = \(bind: tenantId) AND provider = \(bind: provider.rawValue) AND id = \(bind: orderId)"
        var prior = RefundedOrder()
        for _ in 0..<2 {
            if let row = try await db.raw("SELECT status, subscription_id FROM merchant_orders WHERE \(key)\(orderLock)").first() {
                prior = RefundedOrder(status: try row.decode(column: "status", as: String.self), subscriptionId: try row.decode(column: "subscription_id", as: String?.self))
                try await db.raw("UPDATE merchant_orders SET status = 'refunded', updated_at = \(bind: now) WHERE \(key)").run()
                return prior
            }
            let inserted = try await db.raw("""
                INSERT INTO merchant_orders (tenant_id, provider, id, status, licenses, subscription_id, created_at, updated_at)
                VALUES (\(bind: tenantId), \(bind: provider.rawValue), \(bind: orderId), 'refunded', 0, NULL, \(bind: now), \(bind: now))
                ON CONFLICT (tenant_id, provider, id) DO NOTHING RETURNING id
                """).first()
            if inserted != nil { return prior }
            // Another transaction wrote the row between the two statements: read it again, locked.
        }
        return prior
    }

    enum RenewalRecord: Sendable, Equatable {
        case recorded
        /// The payment was refunded before it arrived.
        case refunded
        /// The payment is a purchase that minted (delivered again under another event).
        case alreadyMinted
    }

    /// Records a subscription's renewal payment, once, so a refund of it can find its subscription.
    func recordRenewal(_ paymentId: String, subscription: String) async throws -> RenewalRecord {
        if try await db.raw("""
            INSERT INTO merchant_orders (tenant_id, provider, id, status, licenses, subscription_id, created_at, updated_at)
            VALUES (\(bind: tenantId), \(bind: provider.rawValue), \(bind: paymentId), 'renewal', 0, \(bind: subscription), \(bind: now), \(bind: now))
            ON CONFLICT (tenant_id, provider, id) DO NOTHING RETURNING id
            """).first() != nil { return .recorded }
        let status = try await db.raw("""
            SELECT status FROM merchant_orders WHERE tenant_id = \(bind: tenantId) AND provider = \(bind: provider.rawValue) AND id = \(bind: paymentId)
            """).first(decodingColumn: "status", as: String.self)
        switch status {
        case "refunded": return .refunded
        case "minted": return .alreadyMinted
        default: return .recorded
        }
    }

    /// Ties an order to its subscription (Lemon Squeezy tells it on the subscription): the
    /// order's licenses, minted already or later, follow the subscription.
    func linkOrder(_ orderId: String, subscription: String) async throws {
        try await db.raw("""
            INSERT INTO merchant_orders (tenant_id, provider, id, status, licenses, subscription_id, created_at, updated_at)
            VALUES (\(bind: tenantId), \(bind: provider.rawValue), \(bind: orderId), 'pending', 0, \(bind: subscription), \(bind: now), \(bind: now))
            ON CONFLICT (tenant_id, provider, id) DO UPDATE SET subscription_id = excluded.subscription_id, updated_at = excluded.updated_at
            """).run()
        try await db.raw("""
            UPDATE licenses SET payment_subscription_id = \(bind: subscription), updated_at = \(bind: now)
            WHERE tenant_id = \(bind: tenantId) AND payment_source = \(bind: provider.rawValue) AND payment_order_id = \(bind: orderId)
              AND payment_subscription_id IS NULL
            """).run()
    }

    // MARK: Licenses

    /// Inserts a minted license with where it came from, audited and announced; its mail queued.
    func insertLicense(_ license: License, key: LicenseKey, sealedKey: String, mail: MailRequest?, subscription: String?, customer: String?) async throws {
        try await db.raw("""
            INSERT INTO licenses (\(Database.licenseColumns), payment_subscription_id, payment_customer_id, sealed_key)
            VALUES (\(Database.licenseValues(license)), \(bind: subscription), \(bind: customer), \(bind: sealedKey))
            """).run()
        if let mail {
            try await Database.enqueueMail(db, tenantId: tenantId, kind: mail.kind, licenseId: license.id, to: mail.to, at: now)
        }
        try await record(changeLog.licenseCreated(license, key: key.text, actor: actor, details: [
            "source": provider.rawValue, "order_id": license.paymentOrderId ?? "", "product_id": license.productId,
            "key_type_id": license.keyTypeId, "masked_key": license.maskedKey, "event": eventId,
        ]))
    }

    /// Revokes the order's licenses that are not revoked yet, audited and announced with `reason`.
    func revoke(order orderId: String, reason: String) async throws -> Bool {
        let licenses = try await db.raw("""
            UPDATE licenses SET status = 'revoked', updated_at = \(bind: now)
            WHERE tenant_id = \(bind: tenantId) AND payment_source = \(bind: provider.rawValue) AND payment_order_id = \(bind: orderId) AND status <> 'revoked'
            RETURNING \(Database.licenseColumns)
            """).all(decoding: License.self)
        for license in licenses {
            try await record(changeLog.licenseRevoked(license, actor: actor, details: ["event": eventId, "reason": reason]))
        }
        return !licenses.isEmpty
    }

    // MARK: Subscriptions

    /// The subscriptions this provider has told of, and their licenses.
    var subscriptions: SubscriptionBook {
        SubscriptionBook(db: db, tenantId: tenantId, now: now, eventId: eventId, outbox: outbox, actor: actor, kind: .merchant(provider))
    }

    // MARK: Customers (Paddle names a customer, not an address)

    /// The customer's address, when an event or a lookup has told it.
    func customerEmail(_ id: String) async throws -> String? {
        try await db.raw("""
            SELECT email FROM merchant_customers WHERE tenant_id = \(bind: tenantId) AND provider = \(bind: provider.rawValue) AND id = \(bind: id)
            """).first(decodingColumn: "email", as: String?.self) ?? nil
    }

    /// Notes that a license waits for this customer's address (looked up in the background).
    func awaitCustomer(_ id: String) async throws {
        try await db.raw("""
            INSERT INTO merchant_customers (tenant_id, provider, id, email, status, attempts, next_attempt_at, locked_until, last_error, created_at, updated_at)
            VALUES (\(bind: tenantId), \(bind: provider.rawValue), \(bind: id), NULL, 'pending', 0, \(bind: now), 0, NULL, \(bind: now), \(bind: now))
            ON CONFLICT (tenant_id, provider, id) DO UPDATE SET
                status = CASE WHEN merchant_customers.email IS NULL THEN 'pending' ELSE merchant_customers.status END,
                next_attempt_at = CASE WHEN merchant_customers.email IS NULL THEN excluded.next_attempt_at ELSE merchant_customers.next_attempt_at END,
                attempts = CASE WHEN merchant_customers.email IS NULL THEN 0 ELSE merchant_customers.attempts END,
                created_at = CASE WHEN merchant_customers.email IS NULL THEN excluded.created_at ELSE merchant_customers.created_at END,
                last_error = CASE WHEN merchant_customers.email IS NULL THEN NULL ELSE merchant_customers.last_error END,
                updated_at = excluded.updated_at
            """).run()
    }

    /// Records the customer's address and gives it to their licenses that have none, queueing
    /// each one's mail (`mail`). Answers the licenses that got it.
    func learnCustomer(_ id: String, email: String, mail: Bool) async throws -> [License] {
        try await db.raw("""
            INSERT INTO merchant_customers (tenant_id, provider, id, email, status, attempts, next_attempt_at, locked_until, last_error, created_at, updated_at)
            VALUES (\(bind: tenantId), \(bind: provider.rawValue), \(bind: id), \(bind: email), 'known', 0, \(bind: now), 0, NULL, \(bind: now), \(bind: now))
            ON CONFLICT (tenant_id, provider, id) DO UPDATE SET email = excluded.email, status = 'known', last_error = NULL, updated_at = excluded.updated_at
            """).run()
        let licenses = try await db.raw("""
            UPDATE licenses SET customer_email = \(bind: email), updated_at = \(bind: now)
            WHERE tenant_id = \(bind: tenantId) AND payment_source = \(bind: provider.rawValue) AND payment_customer_id = \(bind: id) AND customer_email IS NULL
            RETURNING \(Database.licenseColumns)
            """).all(decoding: License.self)
        for license in licenses {
            try await record(changeLog.buyerAddressSet(license.id, actor: actor, details: ["event": eventId]))
            if mail, license.status != .revoked { try await Database.enqueueMail(db, tenantId: tenantId, kind: .license, licenseId: license.id, to: email, at: now) }
        }
        return licenses
    }
}
