import SQLKit

extension Migration {
    /// Releases and their artifacts (issue 51): per product, in channels, with the date the
    /// "updates until" rule compares. New tables only: processes of the previous release never
    /// read them.
    static let releases = Migration(name: "0023_releases") { db, capabilities in
        try await db.create(table: "releases")
            .column("id", type: .text, .key)
            .column("tenant_id", type: .text, .notNull)
            .column("product_id", type: .text, .notNull)
            // Sparkle's sparkle:version (the build) and shortVersionString.
            .column("version", type: .text, .notNull)
            .column("short_version", type: .text, .notNull)
            .column("channel", type: .text, .notNull)
            .column("released_at", type: .bigint, .notNull)
            .column("min_system_version", type: .text)
            .column("notes_markdown", type: .text, .notNull)
            .column("critical", type: .boolean, .notNull)
            .column("critical_below", type: .text)
            .column("phased_rollout_seconds", type: .bigint)
            // draft, published or yanked.
            .column("state", type: .text, .notNull)
            .column("created_at", type: .bigint, .notNull)
            .column("published_at", type: .bigint)
            .column("yanked_at", type: .bigint)
            .run()
        try await db.create(index: "releases_by_product").on("releases").column("tenant_id").column("product_id").column("channel").column("released_at").run()
        try await db.create(index: "releases_unique_version").unique().on("releases").column("tenant_id").column("product_id").column("channel").column("version").run()
        try await db.create(table: "release_artifacts")
            .column("release_id", type: .text, .notNull)
            .column("platform", type: .text, .notNull)
            .column("arch", type: .text, .notNull)
            .column("length", type: .bigint, .notNull)
            .column("sha256", type: .text, .notNull)
            .column("ed_signature", type: .text, .notNull)
            // developer (Sparkle's sign_update, checked on upload) or server.
            .column("signed_by", type: .text, .notNull)
            .column("created_at", type: .bigint, .notNull)
            .primaryKey("release_id", "platform", "arch")
            .run(clustered: capabilities)
    }
}
