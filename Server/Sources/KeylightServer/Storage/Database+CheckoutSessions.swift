import SQLKit

/// What a buyer's success page gets for a Checkout Session.
enum CheckoutPickup: Sendable {
    /// The first pick-up: the key (now erased from the database) and its license.
    case license(key: String, license: License, origin: String?)
    /// Known, but no license yet: the event has not arrived, or a delayed payment is on its way.
    case pending(paymentStatus: String?, origin: String?)
    case paymentFailed(origin: String?)
    /// Picked up already, or more than the pick-up window after minting.
    case gone(origin: String?)
    case unknown
}

extension Database {
    /// Notes a session Keylight created, so its success page can tell "pending" from "unknown"
    /// and answer its origin's CORS requests.
    func recordCheckoutSession(tenantId: String, id: String, successOrigin: String?, now: Int64) async throws {
        try await write { db in
            try await db.raw("""
                INSERT INTO checkout_sessions (tenant_id, id, success_origin, payment_status, created_at)
                VALUES (\(bind: tenantId), \(bind: id), \(bind: successOrigin), NULL, \(bind: now))
                ON CONFLICT (tenant_id, id) DO NOTHING
                """).run()
        }
    }

    /// Hands out a session's key once: the claim and the erasure of the sealed key commit
    /// together, so two concurrent pick-ups get it once between them. `open` unseals the key
    /// inside the transaction, so a key that cannot be opened is not erased.
    func pickUpCheckoutLicense(tenantId: String, sessionId: String, now: Int64, window: Int64, open: @escaping @Sendable (String) throws -> String) async throws -> CheckoutPickup {
        let lock = lockRows(of: "checkout_sessions")
        return try await write { db in
            guard let row = try await db.raw("""
                SELECT success_origin, payment_status, license_id, sealed_license_key, minted_at, claimed_at
                FROM checkout_sessions WHERE tenant_id = \(bind: tenantId) AND id = \(bind: sessionId)\(lock)
                """).first() else { return .unknown }
            let origin = try row.decode(column: "success_origin", as: String?.self)
            let paymentStatus = try row.decode(column: "payment_status", as: String?.self)
            if paymentStatus == "failed" { return .paymentFailed(origin: origin) }
            guard let licenseId = try row.decode(column: "license_id", as: String?.self) else {
                return .pending(paymentStatus: paymentStatus, origin: origin)
            }
            let mintedAt = try row.decode(column: "minted_at", as: Int64?.self) ?? 0
            guard try row.decode(column: "claimed_at", as: Int64?.self) == nil, now - mintedAt <= window,
                  let sealed = try row.decode(column: "sealed_license_key", as: String?.self) else { return .gone(origin: origin) }
            guard try await db.raw("""
                UPDATE checkout_sessions SET claimed_at = \(bind: now), sealed_license_key = NULL
                WHERE tenant_id = \(bind: tenantId) AND id = \(bind: sessionId) AND claimed_at IS NULL
                RETURNING id
                """).first() != nil,
                let license = try await db.raw("SELECT \(Self.licenseColumns) FROM licenses WHERE id = \(bind: licenseId) AND tenant_id = \(bind: tenantId)")
                    .first(decoding: License.self) else { return .gone(origin: origin) }
            try await Self.record(
                ChangeLog(tenantId: tenantId, now: now).keyPickedUp(licenseId, checkoutSession: sessionId),
                on: db, outbox: nil
            )
            let key = try open(sealed)
            return .license(key: key, license: license, origin: origin)
        }
    }

    /// Erases keys not picked up within `window` of minting; returns how many.
    @discardableResult
    func purgeUncollectedCheckoutKeys(mintedBefore cutoff: Int64) async throws -> Int {
        try await write { db in
            try await db.raw("""
                UPDATE checkout_sessions SET sealed_license_key = NULL
                WHERE sealed_license_key IS NOT NULL AND minted_at < \(bind: cutoff) RETURNING id
                """).all().count
        }
    }
}
