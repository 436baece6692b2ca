import Crypto
import Foundation
import KeylightCore

/// The appcast and the JSON update check, per viewer.
extension ReleaseService {
    /// A rendered answer with its validator.
    struct FeedAnswer: Sendable {
        var body: String
        var etag: String
        /// Whether it is the same for everyone (a public feed read without a lease).
        var isPublic: Bool
    }

    /// `GET /{tenant}/{product}/appcast.xml[?channel=]`: the builds the viewer's license covers
    /// that Sparkle could choose (``sparkleChoices(_:now:)``) as ordinary items, newest version
    /// first, and the newest build it does not cover as an informational item linking to where
    /// the license is renewed or upgraded. `channel` adds that channel's items (Sparkle shows them
    /// only to apps that allow the channel).
    func appcast(tenantId: String, productId: String, channel: String?, leaseHeader: String?, baseURL: String) async throws -> FeedAnswer {
        guard let feed = try await feed(tenantId: tenantId, productId: productId) else { throw APIError.notFound("Product") }
        let viewer = try await viewer(tenantId: tenantId, productId: productId, leaseHeader: leaseHeader, settings: feed.settings)
        let requested = try ReleaseFields.channel(channel)
        let requestedCode = feed.channelCodes[requested] ?? 0
        let (now, cutoff) = (clock.unixSeconds, viewer.coveredUntil)
        var rule = SparkleChoiceRule()
        var chosen: [Int] = []
        var firstUncovered: Int?
        for (index, entry) in feed.entries.enumerated() where entry.hasMacFile && (entry.channel == 0 || entry.channel == requestedCode) {
            if let cutoff, entry.releasedAt > cutoff {
                if firstUncovered == nil { firstUncovered = index }
                continue
            }
            if rule.settledAll { break }
            if rule.take(channel: entry.channel, unconditional: entry.isUnconditional(at: now)) { chosen.append(index) }
        }
        var items: [String] = []
        items.reserveCapacity(chosen.count + 1)
        let newestCovered = chosen.first.map { feed.byVersion[$0] }
        // Entries are highest version first: an uncovered build before the newest covered one is newer.
        if let uncovered = firstUncovered, uncovered < (chosen.first ?? Int.max), let parts = feed.partsByVersion[uncovered] {
            items.append(AppcastRenderer.informationalItem(parts, link: baseURL + "/portal/\(tenantId)/\(productId)", newestCovered: newestCovered?.version))
        }
        let expiresAt = linkExpiry()
        for index in chosen {
            guard let parts = feed.partsByVersion[index] else { continue }
            items.append(AppcastRenderer.ordinaryItem(parts, url: downloadURL(baseURL, feed: feed, release: feed.byVersion[index], artifact: parts.artifact, viewer: viewer, expiresAt: expiresAt)))
        }
        let body = AppcastRenderer.document(title: feed.product.name, link: baseURL + "/\(tenantId)/\(productId)/appcast.xml", items: items)
        // The answer is a function of the feed and these inputs alone.
        let inputs = [feed.stamp, requested, viewer.instanceId, cutoff.map(String.init) ?? "-", String(expiresAt), baseURL]
        return FeedAnswer(body: body, etag: Self.etag(inputs.joined(separator: "\u{0}")), isPublic: { if case .publicFeed = viewer { true } else { false } }())
    }

    /// The builds among `releases` (highest version first) that Sparkle could pick for some app.
    /// Sparkle installs the highest version that passes its filters, whatever the feed's order, so
    /// a build older than one that always passes them is never picked: the list stops at the
    /// first build without a minimum system and without a rollout still under way. A beta build
    /// rules out only older beta builds (an app that does not allow beta still needs the stable
    /// ones); a stable build rules out everything older. Feeds stay small however long the
    /// history, and each device's links are made for the builds it could install.
    static func sparkleChoices(_ releases: [Release], now: Int64) -> [Release] {
        var rule = SparkleChoiceRule()
        var codes = [Release.stableChannel: 0]
        return releases.filter { release in
            let code = codes[release.channel] ?? { codes[release.channel] = codes.count; return codes.count - 1 }()
            let rolloutEnds = release.phasedRolloutSeconds.map { release.releasedAt + 6 * $0 } ?? Int64.min
            return rule.take(channel: code, unconditional: release.minSystemVersion == nil && now >= rolloutEnds)
        }
    }

    /// The Tauri updater's dynamic-server answer.
    struct LatestUpdate: Encodable, Sendable {
        var version: String
        var notes: String
        var pub_date: String
        var url: String
        var signature: String
    }

    /// `GET /{tenant}/{product}/updates/latest?current=&target=&arch=[&channel=]`: the newest
    /// build the license covers whose short version is above `current`, with a file for the
    /// target and architecture (or a universal one); nil when there is none (204).
    func latest(tenantId: String, productId: String, current: String?, target: String?, arch: String?, channel: String?, leaseHeader: String?, baseURL: String) async throws -> LatestUpdate? {
        guard let feed = try await feed(tenantId: tenantId, productId: productId) else { throw APIError.notFound("Product") }
        let viewer = try await viewer(tenantId: tenantId, productId: productId, leaseHeader: leaseHeader, settings: feed.settings)
        let current = try ReleaseFields.version(current, "current")
        let platform = try Self.platform(target ?? "darwin")
        let arch = try Self.arch(arch ?? "universal")
        let channels: Set<String> = [Release.stableChannel, try ReleaseFields.channel(channel)]
        let newest = feed.releases
            .filter { channels.contains($0.channel) && viewer.covers($0) && SparkleVersion.compare($0.shortVersion, current) > 0 }
            .sorted { SparkleVersion.compare($0.shortVersion, $1.shortVersion) > 0 }
            .lazy.compactMap { release -> (Release, ReleaseArtifact)? in
                let files = (feed.artifacts[release.id] ?? []).filter { $0.platform == platform }
                let names = Self.archAliases(arch)
                return (files.first { names.contains($0.arch) } ?? files.first { $0.arch == "universal" }).map { (release, $0) }
            }.first
        guard let (release, artifact) = newest else { return nil }
        return LatestUpdate(
            version: release.shortVersion, notes: release.notesMarkdown, pub_date: AppcastRenderer.rfc3339(release.releasedAt),
            url: downloadURL(baseURL, feed: feed, release: release, artifact: artifact, viewer: viewer, expiresAt: linkExpiry()),
            signature: artifact.edSignature
        )
    }

    /// The newest stable build `license` covers and a download link for its buyer (the account
    /// page): the Mac file where there is one. The link works for ``ReleaseDeliveryConfiguration/downloadLinkSeconds``.
    func newestCoveredBuild(for license: License) async throws -> (release: Release, artifact: ReleaseArtifact, url: String)? {
        guard let feed = try await feed(tenantId: license.tenantId, productId: license.productId) else { return nil }
        let viewer = UpdateViewer.licensed(
            coveredUntil: UpdateViewer.coveredUntil(updatesUntil: license.updatesUntil, expiresAt: license.expiresAt), instanceId: DownloadToken.anonymous
        )
        let newest = feed.byVersion
            .filter { $0.channel == Release.stableChannel && viewer.covers($0) }
            .lazy.compactMap { release in
                (AppcastRenderer.macArtifact(feed.artifacts[release.id] ?? []) ?? feed.artifacts[release.id]?.first).map { (release, $0) }
            }.first
        guard let (release, artifact) = newest else { return nil }
        // Relative: the page is served by this server, whatever name the buyer reached it by.
        return (release, artifact, downloadURL("", feed: feed, release: release, artifact: artifact, viewer: viewer, expiresAt: linkExpiry()))
    }

    /// Links expire on a five-minute grid, so a feed read twice in a row is the same bytes (one
    /// ETag): rounded up, so a link lives at least the configured time, and at most 300 s more.
    func linkExpiry() -> Int64 {
        let now = clock.unixSeconds
        return now - now % 300 + 300 + configuration.downloadLinkSeconds
    }

    func downloadURL(_ base: String, feed: ProductFeed, release: Release, artifact: ReleaseArtifact, viewer: UpdateViewer, expiresAt: Int64) -> String {
        let path = base + "/\(feed.product.tenantId)/\(feed.product.id)/downloads/\(release.id)/\(artifact.platform)/\(artifact.arch)/\(artifact.fileName ?? ArtifactKind.fallbackName)"
        // A public feed's files need no token; a device's link carries its own.
        if case .publicFeed = viewer { return path }
        let token = DownloadToken(expiresAt: expiresAt, instanceId: viewer.instanceId)
        return path + "?token=" + token.encoded(for: .init(tenantId: feed.product.tenantId, productId: feed.product.id, releaseId: release.id, platform: artifact.platform, arch: artifact.arch), signer: downloadSigner)
    }

    static func etag(_ body: String) -> String {
        "\"" + SHA256.hash(data: Data(body.utf8)).prefix(12).map { String(format: "%02x", $0) }.joined() + "\""
    }

    /// `darwin`, `windows` or `linux`; `macos` is read as `darwin`.
    static func platform(_ value: String) throws(APIError) -> String {
        switch value {
        case "darwin", "macos": "darwin"
        case "windows", "linux": value
        default: throw .invalidRequest("platform is darwin (or macos), windows or linux.")
        }
    }

    /// The names one architecture goes by: Tauri says `aarch64` where Apple says `arm64`.
    static func archAliases(_ arch: String) -> Set<String> {
        for family: Set<String> in [["arm64", "aarch64"], ["x86_64", "amd64", "x64"], ["i686", "x86", "i386"]] where family.contains(arch) { return family }
        return [arch]
    }

    /// 1-16 of lower-case letters, digits and underscores (`universal`, `arm64`, `x86_64`, `aarch64`).
    static func arch(_ value: String) throws(APIError) -> String {
        guard (1...16).contains(value.utf8.count), value.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F }) else {
            throw .invalidRequest("arch is 1-16 lower-case letters, digits or underscores, such as universal, arm64 or x86_64.")
        }
        return value
    }
}

/// ``ReleaseService/sparkleChoices(_:now:)``'s rule, walked highest version first: a build is a
/// choice until an unconditional build has settled its channel (a stable one settles all).
struct SparkleChoiceRule {
    private var stableSettled = false
    private var settled: Set<Int> = []

    /// Nothing older can be a choice any more.
    var settledAll: Bool { stableSettled }

    /// Whether the build (channel code 0 is stable) is a choice; an unconditional one settles its channel.
    mutating func take(channel: Int, unconditional: Bool) -> Bool {
        guard !stableSettled, !settled.contains(channel) else { return false }
        if unconditional {
            if channel == 0 { stableSettled = true } else { settled.insert(channel) }
        }
        return true
    }
}
