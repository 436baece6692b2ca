import SQLKit

extension Migration {
    /// Team access (issue 50): memberships with roles per tenant, invitations, scoped API tokens,
    /// the second factor, the session list, sign-in slow-down, and who did what in the audit log.
    ///
    /// Every dashboard user of before becomes an owner of every tenant: what each could do stays
    /// the same, nothing is lost or widened. Every column is new and nullable, so processes of the
    /// previous release keep working (they ignore roles until they are replaced).
    static let teamAccess = Migration(name: "0022_team_access") { db, capabilities in
        // tenant_id '*': every tenant (a key column cannot be null).
        try await db.create(table: "team_memberships")
            .column("user_id", type: .text, .notNull)
            .column("tenant_id", type: .text, .notNull)
            .column("role", type: .text, .notNull)
            .column("created_at", type: .bigint, .notNull)
            .primaryKey("user_id", "tenant_id")
            .run(clustered: capabilities)
        try await db.create(index: "team_memberships_by_tenant").on("team_memberships").column("tenant_id").column("role").run()
        try await db.raw("""
            INSERT INTO team_memberships (user_id, tenant_id, role, created_at)
            SELECT id, '*', 'owner', created_at FROM dashboard_users
            """).run()
        // An invitation's token is kept as its hash, and sealed for its mail until it is used.
        try await db.create(table: "team_invitations")
            .column("id", type: .text, .key)
            .column("token_hash", type: .text, .notNull, .unique)
            .column("tenant_id", type: .text, .notNull)
            .column("email", type: .text, .notNull)
            .column("role", type: .text, .notNull)
            .column("sealed_token", type: .text)
            .column("invited_by", type: .text, .notNull)
            // The inviting user's id: their open invitations are withdrawn when they leave or lose rights.
            .column("invited_by_id", type: .text)
            .column("created_at", type: .bigint, .notNull)
            .column("expires_at", type: .bigint, .notNull)
            .column("accepted_at", type: .bigint)
            .column("revoked_at", type: .bigint)
            .run()
        try await db.create(index: "team_invitations_by_tenant").on("team_invitations").column("tenant_id").column("created_at").run()
        // tenant_id NULL: every tenant. permissions: comma-separated (or NULL with a role).
        try await db.create(table: "api_tokens")
            .column("id", type: .text, .key)
            .column("name", type: .text, .notNull)
            .column("token_hash", type: .text, .notNull, .unique)
            .column("tenant_id", type: .text)
            .column("product_id", type: .text)
            .column("permissions", type: .text)
            .column("role", type: .text)
            .column("created_by", type: .text, .notNull)
            // The user's or token's id: a token dies with the rights of whoever made it.
            .column("created_by_id", type: .text)
            .column("created_at", type: .bigint, .notNull)
            .column("expires_at", type: .bigint)
            .column("last_used_at", type: .bigint)
            .column("last_used_address", type: .text)
            .column("revoked_at", type: .bigint)
            .run()
        try await db.create(index: "api_tokens_by_tenant").on("api_tokens").column("tenant_id").column("created_at").run()
        try await db.create(index: "api_tokens_by_creator").on("api_tokens").column("created_by_id").run()
        // The dashboard's sessions as their user sees them: a session whose row is gone or ended
        // is signed out on its next request.
        try await db.create(table: "dashboard_user_sessions")
            .column("sid", type: .text, .key)
            .column("user_id", type: .text, .notNull)
            .column("created_at", type: .bigint, .notNull)
            .column("last_seen_at", type: .bigint, .notNull)
            .column("address", type: .text)
            .column("user_agent", type: .text)
            .column("ended_at", type: .bigint)
            .run()
        try await db.create(index: "dashboard_user_sessions_by_user").on("dashboard_user_sessions").column("user_id").column("last_seen_at").run()
        try await db.create(table: "dashboard_recovery_codes")
            .column("user_id", type: .text, .notNull)
            .column("code_hash", type: .text, .notNull)
            .column("used_at", type: .bigint)
            .primaryKey("user_id", "code_hash")
            .run(clustered: capabilities)
        // Failed sign-ins by account and by address: each failure past a few doubles the wait.
        try await db.create(table: "login_throttle")
            .column("key", type: .text, .key)
            .column("failures", type: .int, .notNull)
            .column("next_allowed_at", type: .bigint, .notNull)
            .column("updated_at", type: .bigint, .notNull)
            .run()
        try await db.addColumns(to: "dashboard_users", [
            // The TOTP secret, sealed under the master key; set while enrolling, live once enabled.
            ("totp_secret", .text),
            ("totp_enabled_at", .bigint),
            // The last time step used: a code works once.
            ("totp_last_step", .bigint),
        ])
        try await db.addColumns(to: "tenants", [("require_two_factor", .boolean)])
        try await db.addColumns(to: "audit_log", [
            ("actor_kind", .text), ("actor_id", .text), ("actor_address", .text), ("actor_user_agent", .text),
        ])
        try await db.create(index: "audit_log_by_actor").on("audit_log").column("actor").column("id").run()
        try await db.create(index: "audit_log_by_actor_id").on("audit_log").column("actor_id").column("id").run()
    }
}
