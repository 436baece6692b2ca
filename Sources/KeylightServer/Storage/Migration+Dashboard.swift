extension Migration {
    /// The dashboard: its users, their sessions (shared by every process), and per-day usage
    /// counts for its charts.
    static let dashboard = Migration(name: "0005_dashboard") { c in
        [
            """
            CREATE TABLE dashboard_users (
                id TEXT PRIMARY KEY,
                email TEXT NOT NULL UNIQUE,
                password_hash TEXT NOT NULL,
                failed_logins INTEGER NOT NULL,
                locked_until \(c.bigint) NOT NULL,
                created_at \(c.bigint) NOT NULL,
                last_login_at \(c.bigint)
            )
            """,
            """
            CREATE TABLE dashboard_sessions (
                id TEXT PRIMARY KEY,
                value TEXT NOT NULL,
                expires_at \(c.bigint)
            )
            """,
            "CREATE INDEX dashboard_sessions_by_expiry ON dashboard_sessions (expires_at)",
            """
            CREATE TABLE usage_daily (
                tenant_id TEXT NOT NULL,
                product_id TEXT NOT NULL,
                day \(c.bigint) NOT NULL,
                activations \(c.bigint) NOT NULL,
                validations \(c.bigint) NOT NULL,
                PRIMARY KEY (tenant_id, product_id, day)
            )\(c.clusteredTable)
            """,
        ]
    }
}
