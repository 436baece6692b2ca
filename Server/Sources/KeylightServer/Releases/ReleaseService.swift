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
    private let feeds = NIOLockedValueBox<[String: ProductFeed]>([:])
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
    struct ProductFeed: Sendable {
        var product: Product
        var settings: ProductUpdateSettings
        var releases: [Release]
        /// The same releases, highest version first (as Sparkle ranks them), sorted once per read.
        var byVersion: [Release]
        var artifacts: [String: [ReleaseArtifact]]
        var parts: [String: AppcastItemParts]
        var readAt: Int64
        /// A digest of everything the feeds are made of, so an answer's ETag is made from it and
        /// the request's own inputs rather than by hashing each answer.
        var stamp: String
    }

    /// The product's feed, read again when older than ``feedLifetime``; nil for no such product.
    func feed(tenantId: String, productId: String) async throws -> ProductFeed? {
        let key = tenantId + "/" + productId
        let now = clock.unixSeconds
        if let cached = feeds.withLockedValue({ $0[key] }), now - cached.readAt < Self.feedLifetime, now >= cached.readAt { return cached }
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
        let byVersion = releases.sorted { SparkleVersion.compare($0.version, $1.version) > 0 }
        let feed = ProductFeed(product: product, settings: settings, releases: releases, byVersion: byVersion, artifacts: artifacts, parts: parts, readAt: now, stamp: stamp)
        feeds.withLockedValue { $0[key] = feed }
        return feed
    }

    /// Drops this process's copy of a product's feed (after a publish, a yank or a settings change).
    func forgetFeed(tenantId: String, productId: String) {
        _ = feeds.withLockedValue { $0.removeValue(forKey: tenantId + "/" + productId) }
    }
}
