/// `POST …/products/{p}/releases`. `critical` is an addition: the issue's `critical_below` makes a
/// release critical for installs below that version; `critical: true` makes it critical for all.
struct CreateReleaseRequest: Decodable, Sendable {
    var version: String?
    var short_version: String?
    var channel: String?
    var released_at: Int64?
    var min_system_version: String?
    var notes_markdown: String?
    var critical: Bool?
    var critical_below: String?
    var phased_rollout_interval_seconds: Int64?
}

/// A release as the admin API shows it.
struct ReleaseBody: Encodable {
    var id: String
    var tenant_id: String
    var product_id: String
    var version: String
    var short_version: String
    var channel: String
    var released_at: Int64
    @ExplicitNull var min_system_version: String?
    var notes_markdown: String
    /// The notes rendered to HTML: a safe subset of Markdown, everything else escaped.
    var notes_html: String
    var critical: Bool
    @ExplicitNull var critical_below: String?
    @ExplicitNull var phased_rollout_interval_seconds: Int64?
    var state: String
    var created_at: Int64
    @ExplicitNull var published_at: Int64?
    @ExplicitNull var yanked_at: Int64?
    var artifacts: [ArtifactBody]

    init(_ release: Release, artifacts: [ReleaseArtifact]) {
        id = release.id
        tenant_id = release.tenantId
        product_id = release.productId
        version = release.version
        short_version = release.shortVersion
        channel = release.channel
        released_at = release.releasedAt
        min_system_version = release.minSystemVersion
        notes_markdown = release.notesMarkdown
        notes_html = MarkdownRenderer.html(release.notesMarkdown)
        critical = release.critical
        critical_below = release.criticalBelow
        phased_rollout_interval_seconds = release.phasedRolloutSeconds
        state = release.state.rawValue
        created_at = release.createdAt
        published_at = release.publishedAt
        yanked_at = release.yankedAt
        self.artifacts = artifacts.map(ArtifactBody.init)
    }
}

struct ArtifactBody: Encodable {
    var release_id: String
    var platform: String
    var arch: String
    var length: Int64
    var sha256: String
    var ed_signature: String
    var signed_by: String
    var file_name: String
    var created_at: Int64

    init(_ artifact: ReleaseArtifact) {
        release_id = artifact.releaseId
        platform = artifact.platform
        arch = artifact.arch
        length = artifact.length
        sha256 = artifact.sha256
        ed_signature = artifact.edSignature
        signed_by = artifact.signedBy
        file_name = artifact.fileName ?? ArtifactKind.fallbackName
        created_at = artifact.createdAt
    }
}
