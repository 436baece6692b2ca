import Foundation

extension APIError {
    static let downloadLinkInvalid = APIError(
        status: .forbidden, code: "DOWNLOAD_LINK_INVALID", message: "This download link is not valid here: fetch the appcast again for a link of your own."
    )
    static let downloadLinkExpired = APIError(
        status: .forbidden, code: "DOWNLOAD_LINK_EXPIRED", message: "This download link has expired: the app's update check makes a new one."
    )
    static let releaseNotCovered = APIError(
        status: .forbidden, code: "NOT_COVERED", message: "This license's updates do not cover this release: renew or upgrade it."
    )
}

/// Who may download an artifact: anyone for a public feed; otherwise the link's token, which
/// must be young unless the device's lease comes with it (Sparkle may wait hours for "Install").
extension ReleaseService {
    struct Download: Sendable {
        var release: Release
        var artifact: ReleaseArtifact
        var path: String
        var isPublic: Bool
    }

    func authorizeDownload(
        tenantId: String, productId: String, releaseId: String, platform: String, arch: String, fileName: String, token: String?, leaseHeader: String?
    ) async throws -> Download {
        guard var feed = try await feed(tenantId: tenantId, productId: productId) else { throw APIError.notFound("Product") }
        if !feed.releases.contains(where: { $0.id == releaseId }), feed.readAt < clock.unixSeconds {
            // Published moments ago by another process, perhaps: read once more (at most once a
            // second, so made-up ids cannot turn every request into database reads).
            forgetFeed(tenantId: tenantId, productId: productId)
            guard let fresh = try await self.feed(tenantId: tenantId, productId: productId) else { throw APIError.notFound("Product") }
            feed = fresh
        }
        guard let release = feed.releases.first(where: { $0.id == releaseId }),
              let artifact = feed.artifacts[releaseId]?.first(where: { $0.platform == platform && $0.arch == arch }),
              (artifact.fileName ?? ArtifactKind.fallbackName) == fileName,
              artifact.sha256.utf8.count == 64, artifact.sha256.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw APIError.notFound("Download")
        }
        let download = Download(release: release, artifact: artifact, path: store.path(sha256: artifact.sha256), isPublic: feed.settings.publicFeed)
        if feed.settings.publicFeed {
            // A lease that is sent is checked here too, as on the appcast: never quietly ignored.
            if leaseHeader != nil { _ = try await viewer(tenantId: tenantId, productId: productId, leaseHeader: leaseHeader, settings: feed.settings) }
            return download
        }
        let target = DownloadToken.Target(tenantId: tenantId, productId: productId, releaseId: releaseId, platform: platform, arch: arch)
        let link = try token.map { token throws(APIError) in
            guard let link = DownloadToken.verify(token, for: target, key: downloadKey) else { throw .downloadLinkInvalid }
            return link
        }
        if leaseHeader != nil {
            // The lease is the authority: any link's age, or none; never another device's link.
            let viewer = try await viewer(tenantId: tenantId, productId: productId, leaseHeader: leaseHeader, settings: feed.settings)
            if let link, viewer.instanceId != link.instanceId { throw APIError.downloadLinkInvalid }
            guard viewer.covers(release) else { throw APIError.releaseNotCovered }
        } else {
            guard let link else { throw APIError.leaseRequired }
            guard clock.unixSeconds <= link.expiresAt else { throw APIError.downloadLinkExpired }
        }
        return download
    }

    /// Counts a download for the insights (a resumed download, which starts past byte 0, is not counted again).
    func countDownload(_ download: Download) async {
        do {
            try await database.recordDownload(releaseId: download.release.id, day: clock.unixSeconds / 86_400)
        } catch {
            logger.warning("download not counted", metadata: ["release": "\(download.release.id)", "error": "\(error)"])
        }
    }
}
