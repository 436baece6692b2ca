import Foundation
import KeylightCore
import SQLKit

/// A tenant's settings for one merchant of record, secrets still sealed.
struct MerchantSettings: Sendable, Equatable {
    var sealedWebhookSecret: String
    var sealedAPIKey: String?
    /// Paddle: `production` or `sandbox` (which API the customer lookup calls).
    var environment: String?
    /// Lemon Squeezy: whether test-mode orders mint licenses.
    var acceptTestMode: Bool
    var updatedAt: Int64
}

extension Database {
    // MARK: Settings

    /// Stores a tenant's settings for `provider`, secrets already sealed by the caller; a nil
    /// webhook secret keeps the stored one. False (and nothing stored) when there is no webhook
    /// secret at all.
    func setMerchantSettings(
        tenantId: String, provider: MerchantProvider, sealedWebhookSecret: String?, apiKey: StripeSecretChange,
        environment: String?, acceptTestMode: Bool?, now: Int64, actor: AuditActor
    ) async throws -> Bool {
        let lock = lockRows(of: "merchant_settings")
        return try await write { db in
            let stored = try await db.raw("""
                SELECT sealed_webhook_secret, sealed_api_key, environment, accept_test_mode FROM merchant_settings
                WHERE tenant_id = \(bind: tenantId) AND provider = \(bind: provider.rawValue)\(lock)
                """).first()
            guard let webhookSecret = try sealedWebhookSecret ?? stored?.decode(column: "sealed_webhook_secret", as: String.self) else { return false }
            let storedKey = try stored?.decode(column: "sealed_api_key", as: String?.self) ?? nil
            let sealedAPIKey: String? = switch apiKey {
            case .keep: storedKey
            case .remove: nil
            case .set(let sealed): sealed
            }
            let environment = try environment ?? stored?.decode(column: "environment", as: String?.self) ?? nil
            let testMode = try acceptTestMode ?? stored?.decode(column: "accept_test_mode", as: Bool.self) ?? false
            try await db.raw("""
                INSERT INTO merchant_settings (tenant_id, provider, sealed_webhook_secret, sealed_api_key, environment, accept_test_mode, updated_at)
                VALUES (\(bind: tenantId), \(bind: provider.rawValue), \(bind: webhookSecret), \(bind: sealedAPIKey), \(bind: environment), \(bind: testMode), \(bind: now))
                ON CONFLICT (tenant_id, provider) DO UPDATE SET
                    sealed_webhook_secret = excluded.sealed_webhook_secret, sealed_api_key = excluded.sealed_api_key,
                    environment = excluded.environment, accept_test_mode = excluded.accept_test_mode, updated_at = excluded.updated_at
                """).run()
            let keyChange = switch apiKey {
            case .keep: storedKey == nil ? "unset" : "kept"
            case .remove: "removed"
            case .set: "set"
            }
            var details = ["webhook_secret": sealedWebhookSecret == nil ? "kept" : "set", "api_key": keyChange, "accept_test_mode": "\(testMode)"]
            if let environment { details["environment"] = environment }
            try await Self.audit(db, at: now, actor: actor, action: "\(provider.rawValue).configure", tenantId: tenantId, target: tenantId, details: details)
            return true
        }
    }

    func merchantSettings(tenantId: String, provider: MerchantProvider) async throws -> MerchantSettings? {
        guard let row = try await sql.raw("""
            SELECT sealed_webhook_secret, sealed_api_key, environment, accept_test_mode, updated_at FROM merchant_settings
            WHERE tenant_id = \(bind: tenantId) AND provider = \(bind: provider.rawValue)
            """).first() else { return nil }
        return MerchantSettings(
            sealedWebhookSecret: try row.decode(column: "sealed_webhook_secret", as: String.self),
            sealedAPIKey: try row.decode(column: "sealed_api_key", as: String?.self),
            environment: try row.decode(column: "environment", as: String?.self),
            acceptTestMode: try row.decode(column: "accept_test_mode", as: Bool.self),
            updatedAt: try row.decode(column: "updated_at", as: Int64.self)
        )
    }

    /// Removes a tenant's settings for `provider`: its webhook answers 404 from then on.
    func deleteMerchantSettings(tenantId: String, provider: MerchantProvider, now: Int64, actor: AuditActor) async throws -> Bool {
        try await write { db in
            let deleted = try await db.raw("""
                DELETE FROM merchant_settings WHERE tenant_id = \(bind: tenantId) AND provider = \(bind: provider.rawValue) RETURNING tenant_id
                """).first()
            guard deleted != nil else { return false }
            try await Self.audit(db, at: now, actor: actor, action: "\(provider.rawValue).disconnect", tenantId: tenantId, target: tenantId)
            return true
        }
    }

    // MARK: Events

    /// Records `event` for the tenant and applies it (`apply`, given the event's ledger) in one
    /// transaction, so a repeated delivery (even a concurrent one) changes nothing. An unmapped
    /// purchase is the exception: applied again when retried, until it applies.
    func recordMerchantEvent(
        _ event: MerchantEvent, provider: MerchantProvider, tenantId: String, now: Int64, sealEvent: @escaping @Sendable () throws -> String?,
        retriedBy: AuditActor? = nil, apply: @escaping @Sendable (MerchantLedger) async throws -> MerchantOutcome
    ) async throws -> MerchantOutcome {
        let (outbox, orderLock) = (self.outbox, lockRows(of: "merchant_orders"))
        let rowLock = SQLQueryString(capabilities.rowLockClause.map { " \($0)" } ?? "")
        return try await write { db in
            let fresh = try await db.raw("""
                INSERT INTO merchant_events (tenant_id, provider, id, type, outcome, occurred_at, attempts, sealed_event, received_at, updated_at)
                VALUES (\(bind: tenantId), \(bind: provider.rawValue), \(bind: event.id), \(bind: event.type), 'pending', NULL, 1, NULL, \(bind: now), \(bind: now))
                ON CONFLICT DO NOTHING RETURNING id
                """).first()
            if fresh == nil {
                let retry = try await db.raw("""
                    UPDATE merchant_events SET outcome = 'pending', attempts = attempts + 1, updated_at = \(bind: now)
                    WHERE tenant_id = \(bind: tenantId) AND provider = \(bind: provider.rawValue) AND id = \(bind: event.id)
                      AND outcome = \(bind: MerchantOutcome.unmapped.rawValue)
                    RETURNING id
                    """).first()
                guard retry != nil else { return .duplicate }
            }
            let outcome = try await apply(MerchantLedger(
                db: db, tenantId: tenantId, provider: provider, now: now, eventId: event.id, outbox: outbox, orderLock: orderLock, rowLock: rowLock
            ))
            try await db.raw("""
                UPDATE merchant_events SET outcome = \(bind: outcome.rawValue), sealed_event = \(bind: outcome.isRetryable ? try sealEvent() : nil), updated_at = \(bind: now)
                WHERE tenant_id = \(bind: tenantId) AND provider = \(bind: provider.rawValue) AND id = \(bind: event.id)
                """).run()
            if let retriedBy {
                try await Self.audit(db, at: now, actor: retriedBy, action: "\(provider.rawValue)_event.retry", tenantId: tenantId, target: event.id, details: ["outcome": outcome.rawValue])
            }
            return outcome
        }
    }

    /// Received events with `outcome` (nil: every outcome), newest first.
    func merchantEvents(tenantId: String, provider: MerchantProvider, outcome: String?, limit: Int) async throws -> [MerchantEventRecord] {
        var query: SQLQueryString = """
            SELECT tenant_id, provider, id, type, outcome, attempts, received_at, updated_at, sealed_event IS NOT NULL AS retryable
            FROM merchant_events WHERE tenant_id = \(bind: tenantId) AND provider = \(bind: provider.rawValue)
            """
        if let outcome { query += " AND outcome = \(bind: outcome)" }
        query += " ORDER BY received_at DESC, id DESC LIMIT \(literal: limit)"
        return try await sql.raw(query).all(decoding: MerchantEventRecord.self)
    }

    /// The sealed raw event kept for a retryable event; nil when there is none.
    func sealedMerchantEvent(tenantId: String, provider: MerchantProvider, id: String) async throws -> String? {
        try await sql.raw("""
            SELECT sealed_event FROM merchant_events WHERE tenant_id = \(bind: tenantId) AND provider = \(bind: provider.rawValue) AND id = \(bind: id)
            """).first(decodingColumn: "sealed_event", as: String?.self) ?? nil
    }

    /// Drops kept events received before `cutoff` (they name the buyer): still listed, no
    /// longer retryable. Returns how many.
    @discardableResult
    func purgeKeptMerchantEvents(receivedBefore cutoff: Int64) async throws -> Int {
        try await write { db in
            try await db.raw("""
                UPDATE merchant_events SET sealed_event = NULL WHERE sealed_event IS NOT NULL AND received_at < \(bind: cutoff) RETURNING id
                """).all().count
        }
    }

    // MARK: Key-type mappings

    /// What a key type sells as, everywhere: Stripe's price and mode and each merchant's id.
    struct KeyTypeSales: Sendable, Equatable {
        var stripePriceId: String?
        var stripeMode: String?
        var paddlePriceId: String?
        var lemonSqueezyVariantId: String?
        var polarProductId: String?
        var appStoreProductId: String?
    }

    enum KeyTypeSalesUpdate: Sendable {
        case updated(KeyType)
        case notFound
        /// Another key type of the tenant is mapped to this provider id already.
        case taken(field: String, by: String)
    }

    func setKeyTypeSales(tenantId: String, productId: String, id: String, _ sales: KeyTypeSales, now: Int64, actor: AuditActor) async throws -> KeyTypeSalesUpdate {
        try await write { db in
            for (field, value) in [("paddle_price_id", sales.paddlePriceId), ("lemonsqueezy_variant_id", sales.lemonSqueezyVariantId), ("polar_product_id", sales.polarProductId)] {
                guard let value else { continue }
                if let owner = try await db.raw("""
                    SELECT product_id, id FROM key_types WHERE tenant_id = \(bind: tenantId) AND \(ident: field) = \(bind: value)
                      AND NOT (product_id = \(bind: productId) AND id = \(bind: id))
                    """).first() {
                    return .taken(field: field, by: "\(try owner.decode(column: "product_id", as: String.self))/\(try owner.decode(column: "id", as: String.self))")
                }
            }
            // A StoreKit product id belongs to one key type of its product (another app may reuse it).
            if let appStore = sales.appStoreProductId, let owner = try await db.raw("""
                SELECT id FROM key_types WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND appstore_product_id = \(bind: appStore) AND id <> \(bind: id)
                """).first(decodingColumn: "id", as: String.self) {
                return .taken(field: "appstore_product_id", by: "\(productId)/\(owner)")
            }
            let updated = try await db.raw("""
                UPDATE key_types SET appstore_product_id = \(bind: sales.appStoreProductId), stripe_price_id = \(bind: sales.stripePriceId), stripe_mode = \(bind: sales.stripeMode),
                    paddle_price_id = \(bind: sales.paddlePriceId), lemonsqueezy_variant_id = \(bind: sales.lemonSqueezyVariantId),
                    polar_product_id = \(bind: sales.polarProductId)
                WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND id = \(bind: id)
                RETURNING \(Self.keyTypeColumns)
                """).first(decoding: KeyType.self)
            guard let updated else { return .notFound }
            try await Self.audit(db, at: now, actor: actor, action: "key_type.update", tenantId: tenantId, target: "\(productId)/\(id)", details: [
                "stripe_price_id": sales.stripePriceId ?? "none", "stripe_mode": sales.stripeMode ?? "none",
                "paddle_price_id": sales.paddlePriceId ?? "none", "lemonsqueezy_variant_id": sales.lemonSqueezyVariantId ?? "none",
                "polar_product_id": sales.polarProductId ?? "none", "appstore_product_id": sales.appStoreProductId ?? "none",
            ])
            return .updated(updated)
        }
    }
}

/// A received merchant event as the admin API and dashboard list it.
struct MerchantEventRecord: Decodable, Sendable {
    var tenantId: String
    var provider: String
    var id: String
    var type: String
    var outcome: String
    var attempts: Int
    var receivedAt: Int64
    var updatedAt: Int64
    var retryable: Bool

    enum CodingKeys: String, CodingKey {
        case tenantId = "tenant_id", provider, id, type, outcome, attempts, receivedAt = "received_at", updatedAt = "updated_at", retryable
    }
}
