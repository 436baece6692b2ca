import SQLKit

extension Database {
    static let releaseColumns: SQLQueryString = """
        id, tenant_id, product_id, version, short_version, channel, released_at, min_system_version, notes_markdown, critical,
        critical_below, phased_rollout_seconds, state, created_at, published_at, yanked_at
        """

    static let artifactColumns: SQLQueryString = "release_id, platform, arch, length, sha256, ed_signature, signed_by, created_at, file_name"

    /// Inserts a draft (audited); false when the product's channel already has that version.
    func insertRelease(_ release: Release, actor: AuditActor) async throws -> Bool {
        try await write { db in
            guard try await db.raw("""
                INSERT INTO releases (\(Self.releaseColumns)) VALUES (
                    \(bind: release.id), \(bind: release.tenantId), \(bind: release.productId), \(bind: release.version), \(bind: release.shortVersion),
                    \(bind: release.channel), \(bind: release.releasedAt), \(bind: release.minSystemVersion), \(bind: release.notesMarkdown),
                    \(bind: release.critical), \(bind: release.criticalBelow), \(bind: release.phasedRolloutSeconds), \(bind: release.state.rawValue),
                    \(bind: release.createdAt), \(bind: Int64?.none), \(bind: Int64?.none))
                ON CONFLICT DO NOTHING RETURNING id
                """).first() != nil else { return false }
            try await Self.audit(db, at: release.createdAt, actor: actor, action: "release.create", tenantId: release.tenantId, target: release.id, details: [
                "product_id": release.productId, "version": release.version, "short_version": release.shortVersion, "channel": release.channel,
            ])
            return true
        }
    }

    func release(tenantId: String, productId: String, id: String) async throws -> Release? {
        try await sql.raw("""
            SELECT \(Self.releaseColumns) FROM releases WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND id = \(bind: id)
            """).first(decoding: Release.self)
    }

    /// The product's releases, newest first by release date, optionally of one channel.
    func releases(tenantId: String, productId: String, channel: String?, limit: Int) async throws -> [Release] {
        var query: SQLQueryString = "SELECT \(Self.releaseColumns) FROM releases WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)"
        if let channel { query += " AND channel = \(bind: channel)" }
        query += " ORDER BY released_at DESC, created_at DESC LIMIT \(literal: limit)"
        return try await sql.raw(query).all(decoding: Release.self)
    }

    func artifacts(releaseIds: [String]) async throws -> [ReleaseArtifact] {
        guard !releaseIds.isEmpty else { return [] }
        return try await sql.raw("""
            SELECT \(Self.artifactColumns) FROM release_artifacts
            WHERE release_id IN (\(binds: releaseIds)) ORDER BY platform, arch
            """).all(decoding: ReleaseArtifact.self)
    }

    /// Moves a release from `from` to `to` (publish: draft → published; yank: published or draft →
    /// yanked), audited. Answers the release as it is afterwards, or nil when it is not in a state
    /// it can move from. Publishing needs an artifact: a feed item without a file updates nothing.
    enum ReleaseMove { case moved(Release), wrongState(Release.State), noArtifact, notFound }

    func moveRelease(tenantId: String, productId: String, id: String, to state: Release.State, now: Int64, actor: AuditActor) async throws -> ReleaseMove {
        try await write { db in
            guard let current = try await db.raw("""
                SELECT \(Self.releaseColumns) FROM releases WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND id = \(bind: id)
                """).first(decoding: Release.self) else { return .notFound }
            let allowed: [Release.State] = state == .published ? [.draft] : [.draft, .published]
            guard allowed.contains(current.state) else { return .wrongState(current.state) }
            if state == .published {
                let artifacts = try await db.raw("SELECT COUNT(*) AS n FROM release_artifacts WHERE release_id = \(bind: id)").first(decodingColumn: "n", as: Int.self) ?? 0
                guard artifacts > 0 else { return .noArtifact }
            }
            let column: SQLQueryString = state == .published ? "published_at" : "yanked_at"
            guard let moved = try await db.raw("""
                UPDATE releases SET state = \(bind: state.rawValue), \(column) = \(bind: now)
                WHERE id = \(bind: id) AND state = \(bind: current.state.rawValue) RETURNING \(Self.releaseColumns)
                """).first(decoding: Release.self) else { return .wrongState(current.state) }
            try await Self.audit(db, at: now, actor: actor, action: state == .published ? "release.publish" : "release.yank", tenantId: tenantId, target: id, details: [
                "product_id": productId, "version": current.version, "channel": current.channel,
            ])
            return .moved(moved)
        }
    }

    enum ArtifactSave { case saved, wrongState(Release.State), notFound }

    /// Records a release's file for its platform and architecture, replacing an earlier upload
    /// of the same pair (audited). Only a draft takes files: a published build's bytes and
    /// signature are what clients have already been told.
    func saveArtifact(_ artifact: ReleaseArtifact, tenantId: String, productId: String, actor: AuditActor) async throws -> ArtifactSave {
        try await write { db in
            guard let state = try await db.raw("""
                SELECT state FROM releases WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND id = \(bind: artifact.releaseId)
                """).first(decodingColumn: "state", as: String.self).flatMap(Release.State.init(rawValue:)) else { return .notFound }
            guard state == .draft else { return .wrongState(state) }
            try await db.raw("""
                INSERT INTO release_artifacts (\(Self.artifactColumns)) VALUES (
                    \(bind: artifact.releaseId), \(bind: artifact.platform), \(bind: artifact.arch), \(bind: artifact.length), \(bind: artifact.sha256),
                    \(bind: artifact.edSignature), \(bind: artifact.signedBy), \(bind: artifact.createdAt), \(bind: artifact.fileName))
                ON CONFLICT (release_id, platform, arch) DO UPDATE SET length = \(bind: artifact.length), sha256 = \(bind: artifact.sha256),
                    ed_signature = \(bind: artifact.edSignature), signed_by = \(bind: artifact.signedBy), created_at = \(bind: artifact.createdAt),
                    file_name = \(bind: artifact.fileName)
                """).run()
            try await Self.audit(db, at: artifact.createdAt, actor: actor, action: "release.artifact", tenantId: tenantId, target: artifact.releaseId, details: [
                "product_id": productId, "platform": artifact.platform, "arch": artifact.arch, "length": String(artifact.length),
                "sha256": artifact.sha256, "signed_by": artifact.signedBy,
            ])
            return .saved
        }
    }

    /// The product's published releases (every channel), newest release date first.
    func publishedReleases(tenantId: String, productId: String, limit: Int) async throws -> [Release] {
        try await sql.raw("""
            SELECT \(Self.releaseColumns) FROM releases WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND state = 'published'
            ORDER BY released_at DESC, created_at DESC LIMIT \(literal: limit)
            """).all(decoding: Release.self)
    }

    /// Counts one download of a release on `day` (days since 1970).
    func recordDownload(releaseId: String, day: Int64) async throws {
        try await write { db in
            try await db.raw("""
                INSERT INTO release_downloads (release_id, day, downloads) VALUES (\(bind: releaseId), \(bind: day), 1)
                ON CONFLICT (release_id, day) DO UPDATE SET downloads = release_downloads.downloads + 1
                """).run()
        }
    }

    /// Downloads per release, over every day.
    func downloadCounts(releaseIds: [String]) async throws -> [String: Int64] {
        guard !releaseIds.isEmpty else { return [:] }
        struct Row: Decodable { var release_id: String; var n: Int64 }
        let rows = try await sql.raw("""
            SELECT release_id, CAST(SUM(downloads) AS BIGINT) AS n FROM release_downloads WHERE release_id IN (\(binds: releaseIds)) GROUP BY release_id
            """).all(decoding: Row.self)
        return Dictionary(rows.map { ($0.release_id, $0.n) }, uniquingKeysWith: +)
    }
}
