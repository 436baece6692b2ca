import SQLKit

extension Database {
    /// Stores a tenant's Stripe secrets, already sealed by the caller.
    func setStripeSettings(tenantId: String, sealedWebhookSecret: String, sealedSecretKey: String?, now: Int64, actor: Actor) async throws {
        try await write { db in
            try await db.raw("""
                INSERT INTO stripe_settings (tenant_id, sealed_webhook_secret, sealed_secret_key, updated_at)
                VALUES (\(bind: tenantId), \(bind: sealedWebhookSecret), \(bind: sealedSecretKey), \(bind: now))
                ON CONFLICT (tenant_id) DO UPDATE SET
                    sealed_webhook_secret = excluded.sealed_webhook_secret,
                    sealed_secret_key = excluded.sealed_secret_key,
                    updated_at = excluded.updated_at
                """).run()
            try await Self.audit(db, at: now, actor: actor, action: "stripe.configure", tenantId: tenantId, target: tenantId, details: [
                "secret_key": sealedSecretKey == nil ? "unset" : "set",
            ])
        }
    }

    func stripeSettings(tenantId: String) async throws -> (sealedWebhookSecret: String, sealedSecretKey: String?)? {
        guard let row = try await sql.raw("""
            SELECT sealed_webhook_secret, sealed_secret_key FROM stripe_settings WHERE tenant_id = \(bind: tenantId)
            """).first() else { return nil }
        return (try row.decode(column: "sealed_webhook_secret", as: String.self), try row.decode(column: "sealed_secret_key", as: String?.self))
    }
}
