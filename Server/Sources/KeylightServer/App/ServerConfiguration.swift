import Foundation
import KeylightCore

/// Limits on what one client may send.
public struct ServerLimits: Sendable {
    /// Largest accepted request body (protocol: 64 KiB).
    public var maxBodyBytes = 64 * 1024
    /// Requests per client address, over all API routes.
    public var perAddress = RateLimit(perMinute: 1_200, burst: 300)
    /// SDK requests per license key.
    public var perLicense = RateLimit(perMinute: 600, burst: 250)
    /// Dashboard sign-in attempts per client address (accounts and addresses also slow down, ``LoginThrottle``).
    public var signIns = RateLimit(perMinute: 10, burst: 10)
    /// Customer portal forms per client address (key entries, files, freed devices).
    public var portalPerAddress = RateLimit(perMinute: 30, burst: 20)
    /// Customer portal actions per license.
    public var portalPerLicense = RateLimit(perMinute: 20, burst: 10)
    /// "Lost your key?" mails per recipient address: a stranger cannot flood someone's mailbox.
    public var lostKeyPerRecipient = RateLimit(count: 3, perSeconds: 3_600, burst: 3)
    /// "Lost your key?" requests per client address: nor walk a list of addresses.
    public var lostKeyPerClient = RateLimit(count: 10, perSeconds: 3_600, burst: 5)

    public init() {}

    /// No rate limits (benchmarks and load tests).
    public static var unlimited: ServerLimits {
        var limits = ServerLimits()
        limits.perAddress = .unlimited
        limits.perLicense = .unlimited
        limits.signIns = .unlimited
        limits.portalPerAddress = .unlimited
        limits.portalPerLicense = .unlimited
        limits.lostKeyPerRecipient = .unlimited
        limits.lostKeyPerClient = .unlimited
        return limits
    }
}

/// Everything `keylight serve` can be told.
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// 0 picks a free port (reported through `onServerRunning`).
    public var port = 8080
    /// SQLite file; nil keeps the database in memory (tests). Ignored when ``databaseURL`` is set.
    public var databasePath: String? = "keylight.sqlite"
    /// `postgres://user:pass@host:port/db`: a PostgreSQL database shared by any number of processes.
    public var databaseURL: String?
    /// PostgreSQL schemas to use (tests isolate themselves in a schema each).
    var searchPath: [String]?
    /// Connections in the pool (SQLite: per file; PostgreSQL: per process).
    public var poolSize = 4
    /// Master key for secrets in the database: base64 of 32 bytes (`KEYLIGHT_MASTER_KEY`), else
    /// the file at ``masterKeyPath``.
    public var masterKey: String?
    /// Defaults to the database path + `.master-key`.
    public var masterKeyPath: String?
    /// The admin API token (`KEYLIGHT_ADMIN_TOKEN`); without it one is created on first start.
    public var adminToken: String?
    public var limits = ServerLimits()
    /// Release files, download links and the front proxy (issue 51).
    public var releases = ReleaseDeliveryConfiguration()
    /// Request and idle timeouts and the open-connection cap.
    public var connections = ConnectionLimits()
    /// Proxies whose `X-Forwarded-For` names the client (`--trusted-proxies`); none by default.
    public var trustedProxies: TrustedProxies = .none
    /// How often each process re-reads signing keys (another process may have rotated them).
    public var keyRefreshInterval: Duration = .seconds(10)
    /// How often dead floating seats are looked for (activations and validations of a license also
    /// free its dead seats at once, so this bounds only how late counts and `instance.expired` are).
    public var seatSweepInterval: Duration = .seconds(5)
    /// How often buffered validation data (usage counts, device days, keyless check-ins and
    /// validation times) is written.
    public var activityFlushInterval: Duration = .seconds(1)
    /// When a flush writes the validation times: a busy server's are gathered for about 30 s.
    public var validationTimes = ValidationTimesSchedule()
    public var clock: any WallClock = SystemWallClock()
    /// How often the outbox is checked for due webhook deliveries.
    public var webhookPollInterval: Duration = .seconds(2)
    /// Lets webhook endpoints be loopback, private, link-local or other non-public addresses
    /// (`--webhook-allow-private`, `KEYLIGHT_WEBHOOK_ALLOW_PRIVATE=1`): for development and
    /// tests only, since an endpoint could otherwise make the server call its own network.
    public var webhookAllowPrivate = false
    /// The total deadline of one webhook attempt (connect, head and body).
    public var webhookTimeout: Duration = .seconds(15)
    /// Resolves webhook hosts at delivery time; nil: the system resolver on a pool of its own
    /// (tests inject answers).
    var webhookResolver: (any HostResolver)?
    /// The server's public URL (`https://licenses.example.com`), for the dashboard's Swift
    /// snippet; an https URL also marks dashboard cookies `Secure`.
    public var publicURL: String?
    /// bcrypt cost for dashboard passwords (tests lower it).
    var bcryptCost: UInt8 = 12
    /// Threads that check dashboard passwords, and how many checks may wait or run at once
    /// before sign-ins are answered 429.
    public var passwordHashThreads = 1
    public var passwordHashQueue = 16
    /// Keyless (trial, free-tier) installs that never bought a license are forgotten after this
    /// many days without a check-in.
    public var keylessRetentionDays: Int64 = 90
    /// Days the insights keep per-device rows (`device_days`), at least 31; daily roll-ups are kept for good.
    public var insightsRetentionDays: Int64 = 90
    /// How often the insights roll up finished days and prune per-device rows past retention.
    public var insightsRollupInterval: Duration = .seconds(3_600)
    /// How often the server looks for bulk license jobs to work through (`POST …/licenses/bulk`).
    public var bulkJobInterval: Duration = .seconds(1)
    /// How often licenses are looked at for reminders that have come due (their thresholds are
    /// days apart, so a few minutes late is on time).
    public var reminderSweepInterval: Duration = .seconds(600)
    /// Stripe's REST API (`KEYLIGHT_STRIPE_API_BASE`); tests point it at a local server.
    public var stripeAPIBaseURL = "https://api.stripe.com"
    /// Paddle's API for buyers' addresses; nil = `api.paddle.com` or, for a tenant set to
    /// `sandbox`, `sandbox-api.paddle.com` (`--paddle-api-base`: a proxy, or a fake in tests).
    public var paddleAPIBaseURL: String?
    /// PEM files whose certificates replace Apple Root CA - G3 as the roots App Store signed data
    /// must chain to (`--appstore-root-cert`, repeatable): for tests and local tooling.
    public var appStoreRootCertificateFiles: [String] = []
    public var paddleRequestTimeout: Duration = .seconds(10)
    /// How often due customer lookups are looked for.
    public var customerLookupInterval: Duration = .seconds(5)
    /// How long one call to Stripe may take, connecting included (a checkout retries once).
    public var stripeRequestTimeout: Duration = .seconds(20)
    /// Scheduled backups of the SQLite database (nil: none). Refused with PostgreSQL, whose
    /// backups are pg_dump's.
    public var backups: BackupSchedule?
    /// Mail to buyers (nil: none is sent, and `send_email` is refused).
    public var mail: MailConfiguration?

    public init() {}

    var resolvedMasterKeyPath: String? {
        // With PostgreSQL the processes must share one master key: KEYLIGHT_MASTER_KEY or an explicit file.
        masterKeyPath ?? (databaseURL == nil ? databasePath.map { $0 + ".master-key" } : nil)
    }

    /// Where release files live: `--artifacts-dir`, else `keylight-artifacts` beside the SQLite
    /// file (or in the working directory with PostgreSQL), else, for a database in memory, a
    /// folder of this process's own under the temporary directory.
    var resolvedArtifactsDirectory: String {
        if let directory = releases.artifactsDirectory { return directory }
        if databaseURL != nil { return "keylight-artifacts" }
        guard let databasePath else { return NSTemporaryDirectory() + "/keylight-artifacts-" + UUID().uuidString.lowercased() }
        let folder = (databasePath as NSString).deletingLastPathComponent
        return (folder.isEmpty ? "" : folder + "/") + "keylight-artifacts"
    }
}
