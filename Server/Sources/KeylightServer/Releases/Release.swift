/// A build of a product, as Sparkle and the update check see it.
struct Release: Codable, Sendable, Hashable {
    var id: String
    var tenantId: String
    var productId: String
    /// Sparkle's `sparkle:version`: the build (CFBundleVersion), compared to decide what is newer.
    var version: String
    /// `sparkle:shortVersionString` (CFBundleShortVersionString), what people read.
    var shortVersion: String
    var channel: String
    /// The date the "updates until" rule compares: the build's `KeylightReleaseDate`.
    var releasedAt: Int64
    var minSystemVersion: String?
    var notesMarkdown: String
    var critical: Bool
    /// Critical only for installs below this version (`sparkle:criticalUpdate sparkle:version`).
    var criticalBelow: String?
    var phasedRolloutSeconds: Int64?
    var state: State
    var createdAt: Int64
    var publishedAt: Int64?
    var yankedAt: Int64?

    enum State: String, Codable, Sendable {
        case draft, published, yanked
    }

    static let stableChannel = "stable"

    enum CodingKeys: String, CodingKey {
        case id, version, channel, critical, state
        case tenantId = "tenant_id", productId = "product_id", shortVersion = "short_version", releasedAt = "released_at"
        case minSystemVersion = "min_system_version", notesMarkdown = "notes_markdown", criticalBelow = "critical_below"
        case phasedRolloutSeconds = "phased_rollout_seconds", createdAt = "created_at", publishedAt = "published_at", yankedAt = "yanked_at"
    }
}

/// One downloadable file of a release: a platform and architecture, its length, SHA-256 and
/// EdDSA signature (Sparkle's `sparkle:edSignature`).
struct ReleaseArtifact: Codable, Sendable, Hashable {
    var releaseId: String
    var platform: String
    var arch: String
    var length: Int64
    var sha256: String
    var edSignature: String
    /// `developer` (checked on upload against the product's Sparkle key) or `server`.
    var signedBy: String
    var createdAt: Int64
    /// The name downloads are saved under: Sparkle picks its unarchiver by the extension.
    var fileName: String?

    enum CodingKeys: String, CodingKey {
        case platform, arch, length, sha256
        case releaseId = "release_id", edSignature = "ed_signature", signedBy = "signed_by", createdAt = "created_at", fileName = "file_name"
    }
}
