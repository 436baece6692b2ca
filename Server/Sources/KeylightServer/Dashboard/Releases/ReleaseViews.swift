import Foundation

// View models of `releases.mustache`.

/// `releases.mustache`.
struct ReleasesView: Sendable {
    var chrome: Chrome
    var tenantId: String
    var tenantName: String
    var productId: String
    var productName: String
    /// `{server}/{tenant}/{product}/appcast.xml`, on the same server URL as the product page's snippet.
    var appcastURL: String
    /// The server URL is this request's own host: apps need `--public-url`.
    var noPublicURL: Bool
    /// The Info.plist entries Sparkle reads: `SUFeedURL` and `SUPublicEDKey`.
    var plist: String
    /// The server holds the product's Sparkle key and signs uploads; else the developer signs them.
    var serverSigns: Bool
    var publicFeed: Bool
    /// The user holds `releases:publish` (drafts, publish, yank) and `products:write` (the feed
    /// switch); the routes check again.
    var mayPublish: Bool
    var mayWrite: Bool
    var releases: [ReleaseRow]
    /// Today (UTC), the new draft's release date unless changed.
    var today: String
    /// The strand preview's field as typed, its answer, or why it has none.
    var minSystem: String?
    var strand: StrandPreview?
    var strandError: String?

    init(
        chrome: Chrome, tenant: Tenant, product: Product, serverURL: String, publicURL: String?, settings: ProductUpdateSettings,
        figures: [ReleaseFigures], mayPublish: Bool, mayWrite: Bool, now: Int64
    ) {
        self.chrome = chrome
        tenantId = tenant.id
        tenantName = tenant.name
        productId = product.id
        productName = product.name
        let appcastURL = serverURL + "/\(tenant.id)/\(product.id)/appcast.xml"
        self.appcastURL = appcastURL
        noPublicURL = publicURL == nil
        plist = """
            <key>SUFeedURL</key>
            <string>\(appcastURL)</string>
            <key>SUPublicEDKey</key>
            <string>\(settings.sparklePublicKey)</string>
            """
        serverSigns = settings.serverSigns
        publicFeed = settings.publicFeed
        self.mayPublish = mayPublish
        self.mayWrite = mayWrite
        releases = figures.map(ReleaseRow.init)
        today = CivilDay.format(now / 86_400)
    }
}

struct ReleaseRow: Sendable {
    var id: String
    var shortVersion: String
    var version: String
    var channel: String
    var state: String
    var released: String
    /// The release's minimum macOS (named apart from the page's `minSystem`: a nil here would
    /// let Mustache read that one).
    var requiresSystem: String?
    /// "critical", or "critical below 1.2"; nil for an ordinary update.
    var critical: String?
    var artifacts: [ArtifactRow]
    var downloads: Int
    var devices: Int
    /// A draft with a file: it can be published.
    var publishable: Bool
    /// A draft without a file: nothing to publish yet.
    var awaitingFile: Bool
    var yankable: Bool

    init(_ figures: ReleaseFigures) {
        let release = figures.release
        id = release.id
        shortVersion = release.shortVersion
        version = release.version
        channel = release.channel
        state = release.state.rawValue
        released = DashboardFormat.day(release.releasedAt)
        requiresSystem = release.minSystemVersion
        critical = release.criticalBelow.map { "critical below \($0)" } ?? (release.critical ? "critical" : nil)
        artifacts = figures.artifacts.map(ArtifactRow.init)
        downloads = Int(figures.downloads)
        devices = figures.devices
        publishable = release.state == .draft && !figures.artifacts.isEmpty
        awaitingFile = release.state == .draft && figures.artifacts.isEmpty
        yankable = release.state == .published
    }
}

struct ArtifactRow: Sendable {
    var platform: String
    var arch: String
    var fileName: String
    var size: String
    /// `server` or `developer`.
    var signedBy: String

    init(_ artifact: ReleaseArtifact) {
        platform = artifact.platform
        arch = artifact.arch
        fileName = artifact.fileName ?? ArtifactKind.fallbackName
        size = Self.size(artifact.length)
        signedBy = artifact.signedBy
    }

    /// `812 B`, `4.0 KiB`, `12.3 MiB`, `1.2 GiB`.
    static func size(_ bytes: Int64) -> String {
        guard bytes >= 1_024 else { return "\(bytes) B" }
        var value = Double(bytes) / 1_024
        for unit in ["KiB", "MiB"] {
            if value < 1_024 { return String(format: "%.1f", value) + " " + unit }
            value /= 1_024
        }
        return String(format: "%.1f", value) + " GiB"
    }
}
