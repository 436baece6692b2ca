import Foundation
import KeylightCore
import SQLKit

/// Why a purchase cannot become a license, as its rows say: the exchange turns it into the
/// documented error (thrown inside the mint's transaction, so it also rolls it back).
enum AppStoreMintRefusal: Error, Sendable {
    /// A REFUND or REVOKE notification has been applied to the purchase.
    case refunded
    /// The purchase's license belongs to another product that sells the same app.
    case otherProduct
}

/// A verified App Store purchase, ready to become (or find) its license.
struct AppStorePurchase: Sendable {
    var tenantId: String
    var productId: String
    var keyType: KeyType
    var keyPrefix: String
    var transaction: AppStoreTransaction
}

extension Database {
    /// The key type whose `appstore_product_id` is `productIdentifier` in the product, and the product's key prefix.
    func appStoreKeyType(tenantId: String, productId: String, productIdentifier: String) async throws -> KeyType? {
        try await sql.raw("""
            SELECT \(Self.keyTypeColumns) FROM key_types
            WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND appstore_product_id = \(bind: productIdentifier)
            """).first(decoding: KeyType.self)
    }

    /// The license of the purchase's `originalTransactionId`: minted on first sight, once however
    /// many exchanges race (across processes: the purchase row is claimed first, and a concurrent
    /// claim waits for it, then reads the license it committed). A subscription's later
    /// transaction moves the license's expiry forward to what it paid for. Answers the license
    /// and its sealed key.
    func appStoreLicense(_ purchase: AppStorePurchase, sealer: SecretSealer, now: Int64) async throws -> (License, sealedKey: String) {
        let (outbox, lock) = (self.outbox, lockRows(of: "merchant_orders"))
        let transaction = purchase.transaction
        return try await write { db in
            // The purchase's refund marker, taken and locked first: a REFUND applied at the same
            // moment either is seen here, or waits for this mint and then finds its license.
            try await db.raw("""
                INSERT INTO merchant_orders (tenant_id, provider, id, status, licenses, subscription_id, created_at, updated_at)
                VALUES (\(bind: purchase.tenantId), 'appstore', \(bind: transaction.originalTransactionId), 'minted', 1, NULL, \(bind: now), \(bind: now))
                ON CONFLICT DO NOTHING
                """).run()
            let marker = try await db.raw("""
                SELECT status FROM merchant_orders WHERE tenant_id = \(bind: purchase.tenantId) AND provider = 'appstore' AND id = \(bind: transaction.originalTransactionId)\(lock)
                """).first(decodingColumn: "status", as: String.self)
            guard marker != "refunded" else { throw AppStoreMintRefusal.refunded }
            let book = SubscriptionBook(db: db, tenantId: purchase.tenantId, now: now, eventId: transaction.transactionId, outbox: outbox, actor: AuditActor("appstore"), kind: .appStore)
            if let found = try await Self.appStoreLicense(db, tenantId: purchase.tenantId, original: transaction.originalTransactionId) {
                // A purchase is one product's license: another product sharing the bundle has none for it.
                guard found.0.productId == purchase.productId else { throw AppStoreMintRefusal.otherProduct }
                if let expires = transaction.expiresDate { _ = try await book.apply(.paid(through: expires), to: transaction.originalTransactionId) }
                return try await Self.appStoreLicense(db, tenantId: purchase.tenantId, original: transaction.originalTransactionId) ?? found
            }
            let key = try LicenseKey.generate(prefix: purchase.keyPrefix)
            // A subscription runs to what it paid for, as notifications told it before this first exchange too.
            var expiresAt = purchase.keyType.durationDays.map { now + Int64($0) * 86_400 }
            if let expires = transaction.expiresDate {
                try await book.recordPaidThrough(transaction.originalTransactionId, expires)
                expiresAt = SubscriptionState.firstExpiry(durationDays: nil, now: now, subscription: try await book.lock(transaction.originalTransactionId))
            }
            var license = License(
                id: UUID().uuidString.lowercased(), tenantId: purchase.tenantId, productId: purchase.productId, keyTypeId: purchase.keyType.id,
                keyHash: key.keyHash, maskedKey: key.masked, status: .active,
                expiresAt: expiresAt,
                customerEmail: nil, activeInstances: 0, createdAt: now, updatedAt: now,
                updatesUntil: purchase.keyType.updatesDays.map { now + Int64($0) * 86_400 }
            )
            license.paymentSource = "appstore"
            license.paymentOrderId = transaction.originalTransactionId
            let claimed = try await db.raw("""
                INSERT INTO appstore_purchases (tenant_id, original_transaction_id, product_id, license_id, environment, created_at)
                VALUES (\(bind: purchase.tenantId), \(bind: transaction.originalTransactionId), \(bind: purchase.productId), \(bind: license.id),
                        \(bind: transaction.environment), \(bind: now))
                ON CONFLICT DO NOTHING RETURNING license_id
                """).first()
            guard claimed != nil else {
                // Another exchange minted it first (and has committed: its row was waited for).
                guard let found = try await Self.appStoreLicense(db, tenantId: purchase.tenantId, original: transaction.originalTransactionId) else {
                    throw StorageError.corrupt("App Store purchase")
                }
                return found
            }
            let sealedKey = try LicenseKeySeal.seal(key, licenseId: license.id, with: sealer)
            try await db.raw("""
                INSERT INTO licenses (\(Self.licenseColumns), payment_subscription_id, sealed_key)
                VALUES (\(Self.licenseValues(license)), \(bind: transaction.expiresDate == nil ? nil : transaction.originalTransactionId), \(bind: sealedKey))
                """).run()
            try await Self.record(ChangeLog(tenantId: purchase.tenantId, now: now).licenseCreated(license, key: key.text, actor: AuditActor("appstore"), details: [
                "source": "appstore", "order_id": transaction.originalTransactionId, "environment": transaction.environment,
                "product_id": purchase.productId, "key_type_id": purchase.keyType.id, "masked_key": license.maskedKey,
            ]), on: db, outbox: outbox)
            return (license, sealedKey)
        }
    }

    private static func appStoreLicense(_ db: any SQLDatabase, tenantId: String, original: String) async throws -> (License, sealedKey: String)? {
        guard let row = try await db.raw("""
            SELECT \(licenseColumns), sealed_key FROM licenses
            WHERE tenant_id = \(bind: tenantId) AND id = (SELECT license_id FROM appstore_purchases WHERE tenant_id = \(bind: tenantId) AND original_transaction_id = \(bind: original))
            """).first() else { return nil }
        guard let sealed = try row.decode(column: "sealed_key", as: String?.self) else { return nil }
        return (try row.decode(model: License.self), sealed)
    }

    /// The environment an App Store license's purchase came from (for its page).
    func appStoreOrigin(tenantId: String, licenseId: String) async throws -> (originalTransactionId: String, environment: String)? {
        guard let row = try await sql.raw("""
            SELECT original_transaction_id, environment FROM appstore_purchases WHERE tenant_id = \(bind: tenantId) AND license_id = \(bind: licenseId)
            """).first() else { return nil }
        return (try row.decode(column: "original_transaction_id", as: String.self), try row.decode(column: "environment", as: String.self))
    }
}

extension Database {
    /// Applies one App Store notification once per tenant (its `notificationUUID`): `action`
    /// (``AppStoreNotificationAction``, what the notification means) in one transaction,
    /// audited; answers the outcome (`duplicate` when it was applied before).
    func applyAppStoreNotification(
        _ action: AppStoreNotificationAction, uuid: String, type: String, subtype: String?, tenantId: String, transaction: AppStoreTransaction, now: Int64
    ) async throws -> String {
        let outbox = self.outbox
        return try await write { db in
            guard try await db.raw("""
                INSERT INTO merchant_events (tenant_id, provider, id, type, outcome, occurred_at, attempts, sealed_event, received_at, updated_at)
                VALUES (\(bind: tenantId), 'appstore', \(bind: uuid), \(bind: type), 'pending', \(bind: transaction.signedDate), 1, NULL, \(bind: now), \(bind: now))
                ON CONFLICT DO NOTHING RETURNING id
                """).first() != nil else { return "duplicate" }
            let actor = AuditActor("appstore")
            let log = ChangeLog(tenantId: tenantId, now: now)
            let original = transaction.originalTransactionId
            let book = SubscriptionBook(db: db, tenantId: tenantId, now: now, eventId: uuid, outbox: outbox, actor: actor, kind: .appStore)
            let outcome: String
            switch action {
            case .revoke:
                // Remembered whether or not the purchase was exchanged yet: its exchange is then refused.
                try await db.raw("""
                    INSERT INTO merchant_orders (tenant_id, provider, id, status, licenses, subscription_id, created_at, updated_at)
                    VALUES (\(bind: tenantId), 'appstore', \(bind: original), 'refunded', 0, NULL, \(bind: now), \(bind: now))
                    ON CONFLICT (tenant_id, provider, id) DO UPDATE SET status = 'refunded', updated_at = excluded.updated_at
                    """).run()
                let revoked = try await db.raw("""
                    UPDATE licenses SET status = 'revoked', updated_at = \(bind: now)
                    WHERE tenant_id = \(bind: tenantId) AND payment_source = 'appstore' AND payment_order_id = \(bind: original) AND status <> 'revoked'
                    RETURNING \(Self.licenseColumns)
                    """).all(decoding: License.self)
                for license in revoked {
                    try await Self.record(log.licenseRevoked(license, actor: actor, details: ["event": uuid, "reason": "appstore \(type)"]), on: db, outbox: outbox)
                }
                outcome = revoked.isEmpty ? "no_license" : "revoked"
            case .reinstate:
                // Apple took the refund back: the purchase is paid again, and what its refund revoked is reinstated.
                try await db.raw("""
                    UPDATE merchant_orders SET status = 'minted', updated_at = \(bind: now)
                    WHERE tenant_id = \(bind: tenantId) AND provider = 'appstore' AND id = \(bind: original) AND status = 'refunded'
                    """).run()
                let reinstated = try await db.raw("""
                    UPDATE licenses SET status = 'active', updated_at = \(bind: now)
                    WHERE tenant_id = \(bind: tenantId) AND payment_source = 'appstore' AND payment_order_id = \(bind: original) AND status = 'revoked'
                    RETURNING \(Self.licenseColumns)
                    """).all(decoding: License.self)
                for license in reinstated {
                    try await Self.record(log.reinstated(license.id, actor: actor, details: ["event": uuid, "reason": "appstore REFUND_REVERSED"]), on: db, outbox: outbox)
                }
                outcome = reinstated.isEmpty ? "no_license" : "reinstated"
            case .paid(let through):
                outcome = Self.outcomeName(try await book.apply(.paid(through: through), to: original))
            case .ended(let at):
                outcome = Self.outcomeName(try await book.apply(.ended(at: at), to: original))
            case .ignore:
                outcome = "ignored"
            }
            try await db.raw("""
                UPDATE merchant_events SET outcome = \(bind: outcome), updated_at = \(bind: now) WHERE tenant_id = \(bind: tenantId) AND provider = 'appstore' AND id = \(bind: uuid)
                """).run()
            try await Self.audit(db, at: now, actor: actor, action: "appstore.notification", tenantId: tenantId, target: original, details: [
                "notification": uuid, "type": type, "subtype": subtype ?? "", "outcome": outcome, "environment": transaction.environment,
            ])
            return outcome
        }
    }

    private static func outcomeName(_ effect: SubscriptionBook.Effect) -> String {
        switch effect {
        case .expired: "expired"
        case .renewed: "renewed"
        case .stale: "stale"
        case .noLicense: "no_license"
        }
    }

    /// Records (once, audited) a notification Keylight does nothing with: no product of the
    /// tenant sells its app, or it names no transaction. Answers `ignored`, or `duplicate`.
    func ignoreAppStoreNotification(uuid: String, type: String, tenantId: String, reason: String, now: Int64) async throws -> String {
        try await write { db in
            guard try await db.raw("""
                INSERT INTO merchant_events (tenant_id, provider, id, type, outcome, occurred_at, attempts, sealed_event, received_at, updated_at)
                VALUES (\(bind: tenantId), 'appstore', \(bind: uuid), \(bind: type), 'ignored', NULL, 1, NULL, \(bind: now), \(bind: now))
                ON CONFLICT DO NOTHING RETURNING id
                """).first() != nil else { return "duplicate" }
            try await Self.audit(db, at: now, actor: AuditActor("appstore"), action: "appstore.notification", tenantId: tenantId, target: uuid, details: [
                "notification": uuid, "type": type, "outcome": "ignored", "reason": reason,
            ])
            return "ignored"
        }
    }
}
