import Foundation
import SQLKit

/// A customer whose address is still to be learnt, taken for one lookup.
struct CustomerLookup: Decodable, Sendable, Equatable {
    var tenantId: String
    var provider: String
    var id: String
    var attempts: Int
    var createdAt: Int64

    enum CodingKeys: String, CodingKey { case tenantId = "tenant_id", provider, id, attempts, createdAt = "created_at" }
}

extension Database {
    /// Takes due lookups of Paddle customers, for tenants with a Paddle API key, each for a
    /// lease (one looker per customer, across processes).
    func claimCustomerLookups(now: Int64, limit: Int, lease: Int64) async throws -> [CustomerLookup] {
        // Only the customer rows: the tenant's settings row joined in stays free for its PUT.
        let skipLocked = SQLQueryString(capabilities.rowLockClause.map { " \($0) OF c SKIP LOCKED" } ?? "")
        let paddle = MerchantProvider.paddle.rawValue
        return try await write { db in
            try await db.raw("""
                UPDATE merchant_customers SET locked_until = \(bind: now + lease), attempts = attempts + 1
                WHERE (tenant_id, provider, id) IN (
                    SELECT c.tenant_id, c.provider, c.id FROM merchant_customers c
                    JOIN merchant_settings s ON s.tenant_id = c.tenant_id AND s.provider = c.provider
                    WHERE c.provider = \(bind: paddle) AND c.status = 'pending' AND c.next_attempt_at <= \(bind: now) AND c.locked_until <= \(bind: now)
                      AND s.sealed_api_key IS NOT NULL
                    ORDER BY c.next_attempt_at LIMIT \(literal: limit)\(skipLocked)
                ) AND status = 'pending' AND locked_until <= \(bind: now)
                RETURNING tenant_id, provider, id, attempts, created_at
                """).all(decoding: CustomerLookup.self)
        }
    }

    /// Records an address learnt outside an event (a lookup), giving it to the customer's
    /// licenses that have none and queueing their mail.
    @discardableResult
    func learnMerchantCustomer(tenantId: String, provider: MerchantProvider, id: String, email: String, mail: Bool, now: Int64, source: String) async throws -> [License] {
        let outbox = self.outbox
        return try await write { db in
            try await MerchantLedger(db: db, tenantId: tenantId, provider: provider, now: now, eventId: source, outbox: outbox)
                .learnCustomer(id, email: email, mail: mail)
        }
    }

    /// Tries again at `next`, or gives up (`next` nil): the licenses keep no address, and the
    /// failure is audited so an operator can mail the key by hand.
    func customerLookupFailed(_ lookup: CustomerLookup, error: String, next: Int64?, now: Int64) async throws {
        try await write { db in
            try await db.raw("""
                UPDATE merchant_customers SET status = \(bind: next == nil ? "failed" : "pending"), next_attempt_at = \(bind: next ?? now),
                    locked_until = 0, last_error = \(bind: String(error.prefix(300))), updated_at = \(bind: now)
                WHERE tenant_id = \(bind: lookup.tenantId) AND provider = \(bind: lookup.provider) AND id = \(bind: lookup.id) AND status = 'pending'
                """).run()
            if next == nil {
                try await Self.audit(db, at: now, actor: .system, action: "\(lookup.provider).customer_lookup_failed", tenantId: lookup.tenantId, target: lookup.id, details: [
                    "attempts": String(lookup.attempts), "error": String(error.prefix(200)),
                ])
            }
        }
    }
}
