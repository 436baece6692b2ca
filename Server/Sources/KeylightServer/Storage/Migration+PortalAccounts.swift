import SQLKit

extension Migration {
    /// The buyer's account in the portal (issue 49): sign-in links mailed to an address, each
    /// kept as its token's hash, with the token itself sealed under the master key for its mail
    /// (rendered when it goes out, perhaps after retries) until the link is used or purged; used
    /// once, and dead after 15 minutes.
    static let portalAccounts = Migration(name: "0020_portal_accounts") { db, _ in
        try await db.create(table: "portal_sign_in_links")
            .column("token_hash", type: .text, .key)
            .column("tenant_id", type: .text, .notNull)
            .column("email", type: .text, .notNull)
            .column("sealed_token", type: .text)
            .column("expires_at", type: .bigint, .notNull)
            .column("used_at", type: .bigint)
            .column("created_at", type: .bigint, .notNull)
            .run()
        try await db.create(index: "portal_sign_in_links_by_address").on("portal_sign_in_links").column("tenant_id").column("email").column("created_at").run()
    }
}
