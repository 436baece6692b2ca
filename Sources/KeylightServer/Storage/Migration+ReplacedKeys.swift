extension Migration {
    /// Hashes of keys replaced by a remint, so the devices still holding one get a verdict
    /// (422 `LICENSE_REVOKED`) instead of the 404 that clients treat as a configuration error
    /// and ride out (protocol 6.1): a reminted key, often a leaked one, stops working at once.
    static let replacedLicenseKeys = Migration(name: "0007_replaced_license_keys") { c in
        [
            """
            CREATE TABLE replaced_license_keys (
                key_hash TEXT PRIMARY KEY,
                license_id TEXT NOT NULL,
                tenant_id TEXT NOT NULL,
                product_id TEXT NOT NULL,
                replaced_at \(c.bigint) NOT NULL
            )
            """,
        ]
    }
}
