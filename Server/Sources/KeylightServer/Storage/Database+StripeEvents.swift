import Foundation
import KeylightCore
import SQLKit

extension Database {
    /// Records `event` for `tenantId` and applies it (`apply`, given the event's ledger) in one
    /// transaction, so a repeated delivery (even a concurrent one) changes nothing. An event
    /// that named an unknown product is the exception: it is applied again when it comes back,
    /// until it applies.
    ///
    /// `sealEvent` seals the raw event; it is called, and the result kept, only when the
    /// outcome is retryable.
    func recordStripeEvent(
        _ event: StripeEvent, tenantId: String, now: Int64, sealEvent: @escaping @Sendable () throws -> String?, retriedBy: AuditActor? = nil,
        apply: @escaping @Sendable (StripeLedger) async throws -> StripeOutcome
    ) async throws -> StripeOutcome {
        let outbox = self.outbox
        let rowLock = SQLQueryString(capabilities.rowLockClause.map { " \($0)" } ?? "")
        return try await write { db in
            let fresh = try await db.raw("""
                INSERT INTO stripe_events (tenant_id, id, type, outcome, event_created, attempts, sealed_event, received_at, updated_at)
                VALUES (\(bind: tenantId), \(bind: event.id), \(bind: event.type), 'pending', \(bind: event.created), 1, NULL, \(bind: now), \(bind: now))
                ON CONFLICT DO NOTHING RETURNING id
                """).first()
            if fresh == nil {
                // A retryable event is claimed by a conditional update: of two concurrent
                // retries, the second re-reads the row the first wrote and finds it settled.
                let retry = try await db.raw("""
                    UPDATE stripe_events SET outcome = 'pending', attempts = attempts + 1, updated_at = \(bind: now)
                    WHERE tenant_id = \(bind: tenantId) AND id = \(bind: event.id) AND outcome = \(bind: StripeOutcome.unknownProduct.rawValue)
                    RETURNING id
                    """).first()
                guard retry != nil else { return .duplicate }
            }
            let outcome = try await apply(StripeLedger(db: db, tenantId: tenantId, now: now, eventId: event.id, outbox: outbox, rowLock: rowLock))
            try await db.raw("""
                UPDATE stripe_events SET outcome = \(bind: outcome.rawValue), sealed_event = \(bind: outcome.isRetryable ? try sealEvent() : nil), updated_at = \(bind: now)
                WHERE tenant_id = \(bind: tenantId) AND id = \(bind: event.id)
                """).run()
            if let retriedBy {
                try await Self.audit(db, at: now, actor: retriedBy, action: "stripe_event.retry", tenantId: tenantId, target: event.id, details: ["outcome": outcome.rawValue])
            }
            return outcome
        }
    }

    /// Events that are still retryable (or, with `outcome`, any outcome), newest first.
    public func stripeEvents(tenantId: String, outcome: String, limit: Int) async throws -> [StripeEventRecord] {
        try await sql.raw("""
            SELECT tenant_id, id, type, outcome, event_created, attempts, received_at, updated_at, sealed_event IS NOT NULL AS retryable
            FROM stripe_events WHERE tenant_id = \(bind: tenantId) AND outcome = \(bind: outcome)
            ORDER BY received_at DESC, id DESC LIMIT \(literal: limit)
            """).all(decoding: StripeEventRecord.self)
    }

    /// Drops kept events received before `cutoff` (they name the buyer; Stripe stopped sending
    /// them long before): still listed, no longer retryable. Returns how many.
    @discardableResult
    func purgeKeptStripeEvents(receivedBefore cutoff: Int64) async throws -> Int {
        try await write { db in
            try await db.raw("""
                UPDATE stripe_events SET sealed_event = NULL WHERE sealed_event IS NOT NULL AND received_at < \(bind: cutoff) RETURNING id
                """).all().count
        }
    }

    /// The sealed raw event kept for a retryable event; nil when there is none.
    func sealedStripeEvent(tenantId: String, id: String) async throws -> String? {
        try await sql.raw("SELECT sealed_event FROM stripe_events WHERE tenant_id = \(bind: tenantId) AND id = \(bind: id)")
            .first(decodingColumn: "sealed_event", as: String?.self) ?? nil
    }
}

/// A received Stripe event as the admin API and dashboard list it.
public struct StripeEventRecord: Decodable, Sendable {
    public var tenantId: String
    public var id: String
    public var type: String
    public var outcome: String
    public var eventCreated: Int64?
    public var attempts: Int
    public var receivedAt: Int64
    public var updatedAt: Int64
    /// Whether the event is kept and can be applied again.
    public var retryable: Bool

    enum CodingKeys: String, CodingKey {
        case tenantId = "tenant_id", id, type, outcome, eventCreated = "event_created", attempts
        case receivedAt = "received_at", updatedAt = "updated_at", retryable
    }
}
