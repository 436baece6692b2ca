import KeylightCore
import SQLKit

/// A subscription as its payment provider has told of it: the latest period paid for, and when
/// it ended.
struct SubscriptionState: Sendable, Equatable {
    var paidThrough: Int64?
    var endedAt: Int64?

    /// A new license's expiry: its key type's duration, unless events for its subscription came
    /// first: then the latest period paid for (if later), and never past the subscription's end.
    static func firstExpiry(durationDays: Int?, now: Int64, subscription: SubscriptionState?) -> Int64? {
        var expiresAt = durationDays.map { now + Int64($0) * 86_400 }
        if let paidThrough = subscription?.paidThrough, expiresAt.map({ paidThrough > $0 }) ?? true { expiresAt = paidThrough }
        if let endedAt = subscription?.endedAt { expiresAt = min(expiresAt ?? endedAt, endedAt) }
        return expiresAt
    }
}

/// What each subscription has paid for and when it ended, whatever order that was told in, and
/// the licenses it governs: the same rules for Stripe (`stripe_subscriptions`, licenses'
/// `stripe_subscription_id`) and for merchants of record (`merchant_subscriptions` per provider,
/// licenses' `payment_source` and `payment_subscription_id`). Used inside the transaction that
/// records the event; every statement names the tenant (and the provider).
struct SubscriptionBook: Sendable {
    enum Kind: Sendable {
        case stripe
        case merchant(MerchantProvider)
        /// App Store subscriptions, named by their `originalTransactionId`.
        case appStore

        /// Whether a payment past an end reopens the subscription (the App Store's keep their id).
        var reopensOnPayment: Bool {
            if case .appStore = self { return true }
            return false
        }

        /// The `provider` column and `payment_source` of the merchant-like kinds.
        var source: String? {
            switch self {
            case .stripe: nil
            case .merchant(let provider): provider.rawValue
            case .appStore: "appstore"
            }
        }
    }

    let db: any SQLDatabase
    let tenantId: String
    let now: Int64
    /// The event being applied, named in audit entries.
    let eventId: String
    let outbox: WebhookOutbox?
    let actor: AuditActor
    let kind: Kind
    /// Where the audit entries and outbound events of this event's changes go.
    var changeLog: ChangeLog { ChangeLog(tenantId: tenantId, now: now) }

    /// Writes `entry` in this event's transaction.
    func record(_ entry: ChangeLog.Entry) async throws {
        try await Database.record(entry, on: db, outbox: outbox)
    }

    private var table: SQLQueryString {
        switch kind {
        case .stripe: "stripe_subscriptions"
        case .merchant, .appStore: "merchant_subscriptions"
        }
    }

    private var keyColumns: SQLQueryString {
        switch kind {
        case .stripe: "tenant_id, id"
        case .merchant, .appStore: "tenant_id, provider, id"
        }
    }

    private func keyValues(_ id: String) -> SQLQueryString {
        switch kind {
        case .stripe: "\(bind: tenantId), \(bind: id)"
        case .merchant, .appStore: "\(bind: tenantId), \(bind: kind.source ?? ""), \(bind: id)"
        }
    }

    private func row(_ id: String) -> SQLQueryString {
        switch kind {
        case .stripe: "tenant_id = \(bind: tenantId) AND id = \(bind: id)"
        case .merchant, .appStore: "tenant_id = \(bind: tenantId) AND provider = \(bind: kind.source ?? "") AND id = \(bind: id)"
        }
    }

    private func licenses(of subscription: String) -> SQLQueryString {
        switch kind {
        case .stripe: "tenant_id = \(bind: tenantId) AND stripe_subscription_id = \(bind: subscription)"
        case .merchant, .appStore: "tenant_id = \(bind: tenantId) AND payment_source = \(bind: kind.source ?? "") AND payment_subscription_id = \(bind: subscription)"
        }
    }

    /// The subscription's state, its row created if need be and locked until the transaction
    /// ends: a renewal or an end processed at the same moment (providers send them milliseconds
    /// apart) waits for this mint, then finds its license; or this mint waits for it, then reads
    /// what it wrote.
    func lock(_ id: String) async throws -> SubscriptionState? {
        try await db.raw("""
            INSERT INTO \(table) (\(keyColumns), paid_through, ended_at, updated_at) VALUES (\(keyValues(id)), NULL, NULL, \(bind: now))
            ON CONFLICT (\(keyColumns)) DO UPDATE SET updated_at = excluded.updated_at
            """).run()
        return try await state(id)
    }

    func state(_ id: String) async throws -> SubscriptionState? {
        guard let row = try await db.raw("SELECT paid_through, ended_at FROM \(table) WHERE \(row(id))").first() else { return nil }
        return SubscriptionState(paidThrough: try row.decode(column: "paid_through", as: Int64?.self), endedAt: try row.decode(column: "ended_at", as: Int64?.self))
    }

    /// Records an end; the earliest one reported stays.
    func recordEnd(_ id: String, at endedAt: Int64) async throws {
        try await db.raw("""
            INSERT INTO \(table) (\(keyColumns), paid_through, ended_at, updated_at) VALUES (\(keyValues(id)), NULL, \(bind: endedAt), \(bind: now))
            ON CONFLICT (\(keyColumns)) DO UPDATE SET
                ended_at = CASE WHEN \(table).ended_at IS NULL OR excluded.ended_at < \(table).ended_at THEN excluded.ended_at ELSE \(table).ended_at END,
                updated_at = excluded.updated_at
            """).run()
    }

    /// Records a paid period's end; the latest one reported stays. An App Store subscription keeps
    /// its `originalTransactionId` when it is resubscribed or recovers from billing trouble, so
    /// there a payment past its end reopens it; Stripe's and the merchants' ended subscriptions
    /// stay ended (a new subscription is a new id).
    func recordPaidThrough(_ id: String, _ paidThrough: Int64) async throws {
        let reopens = SQLQueryString(kind.reopensOnPayment ? "1 = 1" : "1 = 0")
        try await db.raw("""
            INSERT INTO \(table) (\(keyColumns), paid_through, ended_at, updated_at) VALUES (\(keyValues(id)), \(bind: paidThrough), NULL, \(bind: now))
            ON CONFLICT (\(keyColumns)) DO UPDATE SET
                paid_through = CASE WHEN \(table).paid_through IS NULL OR excluded.paid_through > \(table).paid_through
                                    THEN excluded.paid_through ELSE \(table).paid_through END,
                ended_at = CASE WHEN \(reopens) AND \(table).ended_at IS NOT NULL AND excluded.paid_through > \(table).ended_at
                                THEN NULL ELSE \(table).ended_at END,
                updated_at = excluded.updated_at
            """).run()
    }

    /// Moves the subscription's licenses that expire later than `endedAt` (or never) back to it.
    /// Audited and announced; answers the licenses moved.
    func expireLicenses(_ subscription: String, at endedAt: Int64) async throws -> [License] {
        try await moveExpiry(subscription, to: endedAt, where: "(expires_at IS NULL OR expires_at > \(bind: endedAt))", renewed: false)
    }

    /// Moves the subscription's unrevoked licenses that expire earlier than `paidThrough` (or
    /// have no expiry yet) forward to it. Audited and announced; answers the licenses moved.
    func renewLicenses(_ subscription: String, to paidThrough: Int64) async throws -> [License] {
        try await moveExpiry(subscription, to: paidThrough, where: "status <> 'revoked' AND (expires_at IS NULL OR expires_at < \(bind: paidThrough))",
                             renewed: true)
    }

    private func moveExpiry(_ subscription: String, to expiresAt: Int64, where condition: SQLQueryString, renewed: Bool) async throws -> [License] {
        let licenses = try await db.raw("""
            UPDATE licenses SET expires_at = \(bind: expiresAt), updated_at = \(bind: now)
            WHERE \(licenses(of: subscription)) AND \(condition)
            RETURNING \(Database.licenseColumns)
            """).all(decoding: License.self)
        for license in licenses {
            try await record(changeLog.expiryMoved(license, renewed: renewed, actor: actor, details: ["event": eventId, "expires_at": String(expiresAt)]))
        }
        return licenses
    }

    func hasLicenses(_ subscription: String) async throws -> Bool {
        try await db.raw("SELECT id FROM licenses WHERE \(licenses(of: subscription)) LIMIT 1").first() != nil
    }

    /// What a subscription event does, the same for every provider: an end moves its licenses'
    /// expiry back to it (clamped to now, once, and no later payment revives them); a payment
    /// moves expiry forward to the latest period any payment covered (an older one arriving late
    /// sets nothing back), never for a subscription that has ended.
    enum Change: Sendable {
        case ended(at: Int64)
        case paid(through: Int64)
    }

    enum Effect: Sendable {
        case expired, renewed, stale, noLicense
    }

    func apply(_ change: Change, to subscription: String) async throws -> Effect {
        switch change {
        case .ended(let at):
            // An App Store end older than a period paid since (a late EXPIRED) ends nothing.
            if kind.reopensOnPayment, let paid = try await state(subscription)?.paidThrough, paid > at {
                return try await hasLicenses(subscription) ? .stale : .noLicense
            }
            let endedAt = min(at, now)
            try await recordEnd(subscription, at: endedAt)
            if try await !expireLicenses(subscription, at: endedAt).isEmpty { return .expired }
        case .paid(let through):
            try await recordPaidThrough(subscription, through)
            if let state = try await state(subscription), state.endedAt == nil, let latest = state.paidThrough,
               try await !renewLicenses(subscription, to: latest).isEmpty {
                return .renewed
            }
        }
        return try await hasLicenses(subscription) ? .stale : .noLicense
    }
}
