import SQLKit

extension Migration {
    /// What delivering releases needs (issue 51): each product's update settings (public feed,
    /// Sparkle key), the file name an artifact is served under, and downloads per release and day.
    /// New tables and a nullable column of a table no earlier release reads.
    static let releaseDelivery = Migration(name: "0024_release_delivery") { db, capabilities in
        try await db.create(table: "product_update_settings")
            .column("tenant_id", type: .text, .notNull)
            .column("product_id", type: .text, .notNull)
            // Without a lease the feed answers 401, unless this is on (trials, the free tier).
            .column("public_feed", type: .boolean, .notNull)
            // Base64 of the Ed25519 public key the app ships as SUPublicEDKey.
            .column("sparkle_public_key", type: .text, .notNull)
            // The server's own private key, sealed under the master key; null when the developer
            // set their own public key (uploads then carry sign_update's signature).
            .column("sparkle_private_key_sealed", type: .text)
            .column("updated_at", type: .bigint, .notNull)
            .primaryKey("tenant_id", "product_id")
            .run(clustered: capabilities)
        try await db.addColumns(to: "release_artifacts", [("file_name", .text)])
        try await db.create(table: "release_downloads")
            .column("release_id", type: .text, .notNull)
            .column("day", type: .bigint, .notNull)
            .column("downloads", type: .bigint, .notNull)
            .primaryKey("release_id", "day")
            .run(clustered: capabilities)
    }
}
