import SQLKit

/// What a settings change does to the stored Stripe secret key.
enum StripeSecretChange: Sendable {
    case keep, remove
    /// Replace it with this sealed key.
    case set(String)
}

extension Database {
    /// Stores a tenant's Stripe secrets, already sealed by the caller; a nil webhook secret keeps
    /// the stored one. False (and nothing stored) when there is no webhook secret at all.
    func setStripeSettings(tenantId: String, sealedWebhookSecret: String?, secretKey: StripeSecretChange, now: Int64, actor: AuditActor) async throws -> Bool {
        let lock = lockRows(of: "stripe_settings")
        return try await write { db in
            let stored = try await db.raw("""
                SELECT sealed_webhook_secret, sealed_secret_key FROM stripe_settings WHERE tenant_id = \(bind: tenantId)\(lock)
                """).first()
            guard let webhookSecret = try sealedWebhookSecret ?? stored?.decode(column: "sealed_webhook_secret", as: String.self) else { return false }
            let storedKey = try stored?.decode(column: "sealed_secret_key", as: String?.self) ?? nil
            let sealedSecretKey: String? = switch secretKey {
            case .keep: storedKey
            case .remove: nil
            case .set(let sealed): sealed
            }
            try await db.raw("""
                INSERT INTO stripe_settings (tenant_id, sealed_webhook_secret, sealed_secret_key, updated_at)
                VALUES (\(bind: tenantId), \(bind: webhookSecret), \(bind: sealedSecretKey), \(bind: now))
                ON CONFLICT (tenant_id) DO UPDATE SET
                    sealed_webhook_secret = excluded.sealed_webhook_secret,
                    sealed_secret_key = excluded.sealed_secret_key,
                    updated_at = excluded.updated_at
                """).run()
            let keyChange = switch secretKey {
            case .keep: storedKey == nil ? "unset" : "kept"
            case .remove: "removed"
            case .set: "set"
            }
            try await Self.audit(db, at: now, actor: actor, action: "stripe.configure", tenantId: tenantId, target: tenantId, details: [
                "webhook_secret": sealedWebhookSecret == nil ? "kept" : "set", "secret_key": keyChange,
            ])
            return true
        }
    }

    func stripeSettings(tenantId: String) async throws -> (sealedWebhookSecret: String, sealedSecretKey: String?)? {
        guard let row = try await sql.raw("""
            SELECT sealed_webhook_secret, sealed_secret_key FROM stripe_settings WHERE tenant_id = \(bind: tenantId)
            """).first() else { return nil }
        return (try row.decode(column: "sealed_webhook_secret", as: String.self), try row.decode(column: "sealed_secret_key", as: String?.self))
    }
}
