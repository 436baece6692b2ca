import SQLKit

extension Database {
    /// Records a sign-in link for `email` and queues its mail, in one transaction. The mail is
    /// queued whatever the address: it is dropped when it is due if the address has no license,
    /// so neither the answer nor its timing tells who bought.
    func createSignInLink(tenantId: String, email: String, tokenHash: String, sealedToken: String, now: Int64, lifetime: Int64) async throws {
        try await write { db in
            try await db.raw("""
                INSERT INTO portal_sign_in_links (token_hash, tenant_id, email, sealed_token, expires_at, used_at, created_at)
                VALUES (\(bind: tokenHash), \(bind: tenantId), \(bind: email), \(bind: sealedToken), \(bind: now + lifetime), NULL, \(bind: now))
                """).run()
            try await Self.enqueueMail(db, tenantId: tenantId, kind: .accountLink, licenseId: nil, to: email, at: now)
        }
    }

    /// The sealed token of the newest link for the address that is still usable (for its mail).
    func signInLinkToken(tenantId: String, email: String, now: Int64) async throws -> String? {
        try await sql.raw("""
            SELECT sealed_token FROM portal_sign_in_links
            WHERE tenant_id = \(bind: tenantId) AND email = \(bind: email) AND used_at IS NULL AND expires_at > \(bind: now) AND sealed_token IS NOT NULL
            ORDER BY created_at DESC LIMIT 1
            """).first(decodingColumn: "sealed_token", as: String.self)
    }

    /// Uses a link once: its address, or nil when the link is unknown, used or expired. The
    /// sealed token is dropped with it.
    func useSignInLink(tenantId: String, tokenHash: String, now: Int64) async throws -> String? {
        try await write { db in
            try await db.raw("""
                UPDATE portal_sign_in_links SET used_at = \(bind: now), sealed_token = NULL
                WHERE token_hash = \(bind: tokenHash) AND tenant_id = \(bind: tenantId) AND used_at IS NULL AND expires_at > \(bind: now)
                RETURNING email
                """).first(decodingColumn: "email", as: String.self)
        }
    }

    /// Every license bought with `email` in the tenant, of products whose portal is on.
    func accountLicenses(tenantId: String, email: String, limit: Int = 100) async throws -> [License] {
        try await sql.raw("""
            SELECT \(Self.licenseColumns) FROM licenses
            WHERE tenant_id = \(bind: tenantId) AND customer_email = \(bind: email)
              AND product_id IN (SELECT id FROM products WHERE tenant_id = \(bind: tenantId) AND portal_enabled)
            ORDER BY created_at, id LIMIT \(literal: limit)
            """).all(decoding: License.self)
    }

    /// Drops links past their life (a day after, so a late click still finds "expired").
    func purgeSignInLinks(expiredBefore cutoff: Int64) async throws {
        try await sql.raw("DELETE FROM portal_sign_in_links WHERE expires_at < \(bind: cutoff)").run()
    }
}
