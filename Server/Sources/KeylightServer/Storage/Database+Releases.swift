import SQLKit

extension Database {
    static let releaseColumns: SQLQueryString = """
        id, tenant_id, product_id, version, short_version, channel, released_at, min_system_version, notes_markdown, critical,
        critical_below, phased_rollout_seconds, state, created_at, published_at, yanked_at
        """

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
            SELECT release_id, platform, arch, length, sha256, ed_signature, signed_by, created_at FROM release_artifacts
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
}
