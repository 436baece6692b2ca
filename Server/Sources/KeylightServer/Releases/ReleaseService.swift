import Crypto
import Foundation
import KeylightCore
import Logging
import NIOConcurrencyHelpers

/// Releases as clients meet them (issue 51): artifact uploads, each product's update settings and
/// Sparkle key, the per-license appcast, the JSON update check and downloads. Shared by the admin
/// API, the dashboard and the public update routes.
final class ReleaseService: Sendable {
    let database: Database
    let sealer: SecretSealer
    let keyRing: KeyRing
    let clock: any WallClock
    let logger: Logger
    let store: ArtifactStore
    let configuration: ReleaseDeliveryConfiguration
    /// `--public-url`: the base of links in feeds (else the request's host).
    let publicURL: String?
    /// Signs download links; derived from the master key, so every process agrees.
    let downloadKey: SymmetricKey
    /// The same key's HMAC, set up once.
    let downloadSigner: DownloadToken.Signer
    /// Published releases per product, read at most every ``feedLifetime`` seconds.
    private let feeds = NIOLockedValueBox(FeedCache())
    /// The feeds, the reads under way (one per product: the requests that find a feed stale
    /// while it is read are served the copy they found), and a count per product that a
    /// ``forgetFeed(tenantId:productId:)`` raises so a read begun before it is not kept.
    private struct FeedCache {
        var feeds: [String: ProductFeed] = [:]
        var reading: [String: Task<ProductFeed?, any Error>] = [:]
        var generations: [String: Int] = [:]
    }
    /// Leases whose signatures verified, by tenant and header text (``verifiedLease(_:tenantId:)``).
    let verifiedLeases = NIOLockedValueBox<[String: Lease]>([:])
    static let verifiedLeaseLimit = 10_000
    /// How long a product's published releases are reused before they are read again. Other
    /// processes' publishes show within this; this process's own at once.
    static let feedLifetime: Int64 = 5
    /// The most releases a feed lists.
    static let feedLimit = 200

    init(database: Database, sealer: SecretSealer, keyRing: KeyRing, clock: any WallClock, configuration: ReleaseDeliveryConfiguration, artifactsDirectory: String, publicURL: String?, logger: Logger) {
        self.database = database
        self.sealer = sealer
        self.keyRing = keyRing
        self.clock = clock
        self.configuration = configuration
        self.store = ArtifactStore(directory: artifactsDirectory)
        self.publicURL = publicURL
        self.logger = logger
        self.downloadKey = sealer.derivedKey(for: "keylight.download-links")
        self.downloadSigner = DownloadToken.Signer(key: downloadKey)
    }

    // MARK: Settings and the Sparkle key

    /// The product's update settings, creating its Sparkle key on first need: the app must ship
    /// `SUPublicEDKey` before its first build is published.
    func updateSettings(tenantId: String, productId: String) async throws -> ProductUpdateSettings {
        if let settings = try await database.updateSettings(tenantId: tenantId, productId: productId) { return settings }
        let key = Curve25519.Signing.PrivateKey()
        return try await database.updateSettingsCreatingIfAbsent(ProductUpdateSettings(
            tenantId: tenantId, productId: productId, publicFeed: false, sparklePublicKey: key.publicKey.rawRepresentation.base64EncodedString(),
            sparklePrivateKeySealed: try sealer.seal(key.rawRepresentation, context: ProductUpdateSettings.sealContext(tenantId: tenantId, productId: productId)),
            updatedAt: clock.unixSeconds
        ))
    }

    /// Changes the public feed setting and/or the Sparkle key: a developer's own public key (the
    /// server then keeps no private key and uploads must carry `sign_update`'s signature), or nil
    /// for a new key of the server's.
    func changeUpdateSettings(tenantId: String, productId: String, publicFeed: Bool?, sparklePublicKey: String??, actor: AuditActor) async throws -> ProductUpdateSettings {
        var settings = try await updateSettings(tenantId: tenantId, productId: productId)
        var details: [String: String] = [:]
        if let publicFeed {
            settings.publicFeed = publicFeed
            details["public_feed"] = "\(publicFeed)"
        }
        switch sparklePublicKey {
        case .none: break
        case .some(.some(let text)):
            let key = try Self.sparklePublicKey(text)
            settings.sparklePublicKey = key.rawRepresentation.base64EncodedString()
            settings.sparklePrivateKeySealed = nil
            details["sparkle_public_key"] = settings.sparklePublicKey
        case .some(.none):
            let key = Curve25519.Signing.PrivateKey()
            settings.sparklePublicKey = key.publicKey.rawRepresentation.base64EncodedString()
            settings.sparklePrivateKeySealed = try sealer.seal(key.rawRepresentation, context: ProductUpdateSettings.sealContext(tenantId: tenantId, productId: productId))
            details["sparkle_public_key"] = settings.sparklePublicKey + " (the server's)"
        }
        guard !details.isEmpty else { return settings }
        settings.updatedAt = clock.unixSeconds
        try await database.saveUpdateSettings(settings, details: details, actor: actor)
        forgetFeed(tenantId: tenantId, productId: productId)
        return settings
    }

    /// A developer's Sparkle public key, checked.
    static func sparklePublicKey(_ text: String) throws(APIError) -> Curve25519.Signing.PublicKey {
        guard let raw = SparkleSignature.decode(text, length: 32), let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else {
            throw .invalidRequest("sparkle_public_key is the base64 Ed25519 public key of Sparkle's generate_keys (SUPublicEDKey).")
        }
        return key
    }

    /// The server's private Sparkle key of the product, opened; nil when the developer holds it.
    func sparklePrivateKey(_ settings: ProductUpdateSettings) throws -> Curve25519.Signing.PrivateKey? {
        guard let sealed = settings.sparklePrivateKeySealed else { return nil }
        let raw = try sealer.open(sealed, context: ProductUpdateSettings.sealContext(tenantId: settings.tenantId, productId: settings.productId))
        return try Curve25519.Signing.PrivateKey(rawRepresentation: raw)
    }

    // MARK: The feed cache

    /// A product's published releases with their artifacts and settings, as the feeds read them.
    /// Immutable and shared by every request until the next read: a class, so handing it out
    /// costs one reference count, not one per field.
    final class ProductFeed: Sendable {
        let product: Product
        let settings: ProductUpdateSettings
        let releases: [Release]
        /// The same releases, highest version first (as Sparkle ranks them), sorted once per read.
        let byVersion: [Release]
        /// What a device's appcast decides on, for each of ``byVersion``: plain values, so the walk
        /// over a long history touches no reference-counted field.
        let entries: [FeedEntry]
        /// The rendered item parts of each of ``byVersion`` (nil: no Mac file).
        let partsByVersion: [AppcastItemParts?]
        /// Channel names to the codes in ``entries``.
        let channelCodes: [String: Int]
        let artifacts: [String: [ReleaseArtifact]]
        let readAt: Int64
        /// A digest of everything the feeds are made of, so an answer's ETag is made from it and
        /// the request's own inputs rather than by hashing each answer.
        let stamp: String

        init(product: Product, settings: ProductUpdateSettings, releases: [Release], artifacts: [String: [ReleaseArtifact]], readAt: Int64, stamp: String, parts: [String: AppcastItemParts]) {
            self.product = product
            self.settings = settings
            self.releases = releases
            self.artifacts = artifacts
            self.readAt = readAt
            self.stamp = stamp
            let byVersion = releases.sorted { SparkleVersion.compare($0.version, $1.version) > 0 }
            self.byVersion = byVersion
            var codes = [Release.stableChannel: 0]
            for release in byVersion where codes[release.channel] == nil { codes[release.channel] = codes.count }
            channelCodes = codes
            partsByVersion = byVersion.map { parts[$0.id] }
            entries = byVersion.map { release in
                FeedEntry(
                    channel: codes[release.channel] ?? 0, releasedAt: release.releasedAt, hasMinimumSystem: release.minSystemVersion != nil,
                    // Sparkle's rollout has seven groups: the last is let in after six intervals.
                    rolloutEnds: release.phasedRolloutSeconds.map { release.releasedAt + 6 * $0 } ?? Int64.min,
                    hasMacFile: parts[release.id] != nil
                )
            }
        }
    }

    /// One release as a device's appcast weighs it.
    struct FeedEntry: Sendable {
        /// 0 is the stable channel.
        var channel: Int
        var releasedAt: Int64
        var hasMinimumSystem: Bool
        /// When the phased rollout has let every group in (`Int64.min`: no rollout).
        var rolloutEnds: Int64
        var hasMacFile: Bool

        /// Whether every Mac may take it at `now`: no minimum system, no rollout under way.
        func isUnconditional(at now: Int64) -> Bool { !hasMinimumSystem && now >= rolloutEnds }
    }

    /// The product's feed, read again when older than ``feedLifetime``; nil for no such product.
    func feed(tenantId: String, productId: String) async throws -> ProductFeed? {
        let key = tenantId + "/" + productId
        let now = clock.unixSeconds
        let (cached, read, started) = feeds.withLockedValue { cache -> (ProductFeed?, Task<ProductFeed?, any Error>?, Bool) in
            let cached = cache.feeds[key]
            if let cached, now - cached.readAt < Self.feedLifetime, now >= cached.readAt { return (cached, nil, false) }
            if let under = cache.reading[key] { return (cached, under, false) }
            let generation = cache.generations[key, default: 0]
            let task = Task { try await self.readFeed(tenantId: tenantId, productId: productId, key: key, generation: generation) }
            cache.reading[key] = task
            return (cached, task, true)
        }
        guard let read else { return cached }
        // Another request is reading it: the copy a few seconds old serves meanwhile.
        if !started, let cached { return cached }
        return try await read.value
    }

    private func readFeed(tenantId: String, productId: String, key: String, generation: Int) async throws -> ProductFeed? {
        defer { feeds.withLockedValue { _ = $0.reading.removeValue(forKey: key) } }
        let now = clock.unixSeconds
        guard TenantPath.isValidId(tenantId), TenantPath.isValidId(productId),
              let product = try await database.product(tenantId: tenantId, id: productId) else { return nil }
        let settings = try await updateSettings(tenantId: tenantId, productId: productId)
        let releases = try await database.publishedReleases(tenantId: tenantId, productId: productId, limit: Self.feedLimit)
        let artifacts = Dictionary(grouping: try await database.artifacts(releaseIds: releases.map(\.id)), by: \.releaseId)
        var parts: [String: AppcastItemParts] = [:]
        for release in releases {
            if let artifact = AppcastRenderer.macArtifact(artifacts[release.id] ?? []) {
                parts[release.id] = AppcastRenderer.parts(release, artifact: artifact)
            }
        }
        var digest = SHA256()
        digest.update(data: Data((product.name + "\u{0}" + settings.sparklePublicKey + "\u{0}\(settings.publicFeed)").utf8))
        for release in releases {
            let part = parts[release.id].map { $0.head + $0.flags + $0.enclosureAttributes + ($0.artifact.fileName ?? "") } ?? ""
            digest.update(data: Data(("\u{0}" + release.id + "\u{0}" + release.channel + "\u{0}\(release.releasedAt)\u{0}" + part).utf8))
        }
        let stamp = digest.finalize().prefix(16).map { String(format: "%02x", $0) }.joined()
        let feed = ProductFeed(product: product, settings: settings, releases: releases, artifacts: artifacts, readAt: now, stamp: stamp, parts: parts)
        feeds.withLockedValue { cache in
            if cache.generations[key, default: 0] == generation { cache.feeds[key] = feed }
        }
        return feed
    }

    /// Drops this process's copy of a product's feed (after a publish, a yank or a settings
    /// change); a read already under way is not kept, and the next request reads afresh.
    func forgetFeed(tenantId: String, productId: String) {
        let key = tenantId + "/" + productId
        feeds.withLockedValue { cache in
            cache.feeds.removeValue(forKey: key)
            cache.reading.removeValue(forKey: key)
            cache.generations[key, default: 0] += 1
        }
    }
}
