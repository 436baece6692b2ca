extension Migration {
    /// Intermediate keys for signed responses (protocol section 3), shared by every process on
    /// the database: one per root key per day, each valid a few days.
    static let responseSigningKeys = Migration(name: "0002_response_signing_keys") { c in
        [
            """
            CREATE TABLE response_signing_keys (
                id TEXT PRIMARY KEY,
                root_kid TEXT NOT NULL,
                created_day \(c.bigint) NOT NULL,
                expiry_day \(c.bigint) NOT NULL,
                sealed_private_key TEXT NOT NULL,
                certificate TEXT NOT NULL,
                created_at \(c.bigint) NOT NULL,
                UNIQUE (root_kid, created_day)
            )
            """,
        ]
    }
}
