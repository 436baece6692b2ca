import ArgumentParser
import Foundation
import KeylightServer
import Logging

/// Options shared by the commands that open the server's database.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("db"), help: "SQLite database file (created on first start).")
    var databasePath = "./keylight.sqlite"

    @Option(help: "Master key file for secrets in the database (default: <db>.master-key; KEYLIGHT_MASTER_KEY overrides).")
    var masterKeyFile: String?

    @Option(help: "PostgreSQL URL (postgres://user:pass@host:port/db), shared by any number of processes; also KEYLIGHT_DATABASE_URL. Default: SQLite at --db.")
    var databaseURL: String?

    /// The PostgreSQL URL from the option or the environment (the same rule `serve` applies).
    var resolvedDatabaseURL: String? {
        ServeSettings.databaseURL(option: databaseURL, environment: ProcessInfo.processInfo.environment)
    }

    func open(poolSize: Int, logger: Logger) async throws -> Database {
        if let url = resolvedDatabaseURL { return try await Database.postgres(url: url, poolSize: poolSize, logger: logger) }
        return try await Database.sqlite(path: databasePath, poolSize: poolSize, logger: logger)
    }
}

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the license server.",
        discussion: """
        Runs on an embedded SQLite database with no other set-up: the first start creates the schema, \
        the first Ed25519 signing key and an admin token, printed once (unless KEYLIGHT_ADMIN_TOKEN is set, \
        or --admin-token-file names where to write it). \
        SIGTERM or SIGINT shut it down gracefully: in-flight requests finish and buffered writes are flushed.
        """
    )

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on (0 picks a free one).")
    var port = 8080

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Write the admin token made on first start to this file (0600) instead of printing it; also KEYLIGHT_ADMIN_TOKEN_FILE.")
    var adminTokenFile: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    @Option(help: "Log format: text or json.")
    var logFormat: LogFormat = .text

    @Option(help: "Requests per minute per client address, as RATE or RATE/BURST (0 = unlimited).")
    var rateLimitAddress: RateLimitOption?

    @Option(help: "SDK requests per minute per license key, as RATE or RATE/BURST (0 = unlimited).")
    var rateLimitLicense: RateLimitOption?

    @Option(help: "Database connection pool size (per process).")
    var poolSize = 4

    @Option(help: "Seconds between re-reads of signing keys made by other processes sharing the database.")
    var keyRefreshInterval = 10

    @Option(help: "Stripe's API base URL (also KEYLIGHT_STRIPE_API_BASE); point it at a test server that speaks Stripe's wire format.")
    var stripeAPIBase: String?

    @Option(help: "A PEM file of App Store root certificates that replaces Apple Root CA - G3 (repeatable): for tests and local tooling only.")
    var appstoreRootCert: [String] = []

    @Option(help: "Paddle's API base URL for buyers' addresses (also KEYLIGHT_PADDLE_API_BASE); default api.paddle.com, or sandbox-api.paddle.com for a tenant set to sandbox.")
    var paddleAPIBase: String?

    @Option(help: "The server's public URL (e.g. https://licenses.example.com): the KeylightServerURL the dashboard gives apps; https makes dashboard cookies Secure. Also KEYLIGHT_PUBLIC_URL.")
    var publicURL: String?

    @Option(help: "Seconds between checks for due outbound webhook deliveries.")
    var webhookPollInterval = 2

    @Flag(help: "Let webhook endpoints be loopback, private, link-local or other non-public addresses (also KEYLIGHT_WEBHOOK_ALLOW_PRIVATE=1). For development and tests only.")
    var webhookAllowPrivate = false

    @Option(help: "Seconds a client may take to send one whole request; a slower one is answered 408 or closed.")
    var requestTimeout = 30

    @Option(help: "Seconds an idle keep-alive connection stays open.")
    var idleTimeout = 60

    @Option(help: "Seconds graceful shutdown may take (requests finish, buffered writes flush); then the process exits with status 1.")
    var shutdownTimeout = 30

    @Option(help: "Open connections per process; further ones are answered 503 and closed at once.")
    var maxConnections = 10_000

    @Option(help: "Proxies (CIDR[,CIDR...]) whose X-Forwarded-For names the client, for rate limits; also KEYLIGHT_TRUSTED_PROXIES. Default: none (the socket peer is the client).")
    var trustedProxies: String?

    @Option(help: "Take backups of the SQLite database into this folder: one at start, then every --backup-every, keeping --backup-keep.")
    var backupDir: String?

    @Option(help: "Time between scheduled backups, as 30m, 1h, 1d (with --backup-dir).")
    var backupEvery: IntervalOption = IntervalOption(seconds: 3_600)

    @Option(help: "How many scheduled backups to keep (with --backup-dir).")
    var backupKeep = 48

    @Option(help: "Mail buyers their keys through this SMTP server: smtp://USER:PASS@HOST:PORT?tls=none|starttls|tls (also KEYLIGHT_SMTP_URL). The password may come from --smtp-password-file or KEYLIGHT_SMTP_PASSWORD instead.")
    var smtpURL: String?

    @Option(help: "A file holding the SMTP password (0600).")
    var smtpPasswordFile: String?

    @Option(help: "PEM certificates to trust for the SMTP server instead of the system's.")
    var smtpCAFile: String?

    @Option(help: "Seconds before a mail that could not be sent is tried again (doubling each time, up to 4 h).")
    var mailRetrySeconds = 30

    @Option(help: "The sender of buyers' mail, as \"Acme Sales <sales@acme.example>\" (also KEYLIGHT_MAIL_FROM).")
    var mailFrom: String?

    @Option(help: "Days the insights keep per-device rows (31-3650); daily totals are kept for good.")
    var insightsRetentionDays = 90

    @Option(help: "Seconds a busy server (more than 256 devices validating between two writes) gathers last-seen times before writing them, so that a page of instances is written once for many devices; 0 writes them every second. They can trail a validation by this long, and a crash can lose them.")
    var lastSeenGathering = 30

    @Option(help: "Folder of release files (default: keylight-artifacts beside the SQLite database); with several PostgreSQL processes, a path they all mount. Also KEYLIGHT_ARTIFACTS_DIR. Not in `keylight backup`: back it up with the database.")
    var artifactsDir: String?

    @Option(help: "Largest release file an upload may send, in bytes.")
    var maxArtifactBytes: Int64 = 2 << 30

    @Option(help: "Seconds a download link works without the device's lease beside it.")
    var downloadLinkSeconds: Int64 = 3_600

    @Option(help: "Hand downloads to a front proxy: answer X-Accel-Redirect: <prefix><ab>/<sha256> (nginx internal location, e.g. /protected-artifacts/).")
    var accelRedirectPrefix: String?

    enum LogFormat: String, ExpressibleByArgument { case text, json }

    /// The options as given; the environment and the checks are the server configuration's.
    var settings: ServeSettings {
        var settings = ServeSettings()
        settings.host = host
        settings.port = port
        settings.databasePath = database.databasePath
        settings.databaseURL = database.databaseURL
        settings.masterKeyFile = database.masterKeyFile
        settings.poolSize = poolSize
        settings.keyRefreshSeconds = keyRefreshInterval
        settings.webhookPollSeconds = webhookPollInterval
        settings.webhookAllowPrivate = webhookAllowPrivate
        settings.publicURL = publicURL
        settings.stripeAPIBase = stripeAPIBase
        settings.paddleAPIBase = paddleAPIBase
        settings.appStoreRootCertificateFiles = appstoreRootCert
        settings.requestTimeoutSeconds = requestTimeout
        settings.idleTimeoutSeconds = idleTimeout
        settings.shutdownTimeoutSeconds = shutdownTimeout
        settings.maxConnections = maxConnections
        settings.trustedProxies = trustedProxies
        settings.insightsRetentionDays = insightsRetentionDays
        settings.lastSeenGatheringSeconds = lastSeenGathering
        settings.backupDirectory = backupDir
        settings.backupEverySeconds = backupEvery.seconds
        settings.backupKeep = backupKeep
        settings.smtpURL = smtpURL
        settings.smtpPasswordFile = smtpPasswordFile
        settings.smtpCAFile = smtpCAFile
        settings.mailFrom = mailFrom
        settings.mailRetrySeconds = mailRetrySeconds
        settings.rateLimitAddress = rateLimitAddress?.limit
        settings.rateLimitLicense = rateLimitLicense?.limit
        settings.artifactsDirectory = artifactsDir
        settings.maxArtifactBytes = maxArtifactBytes
        settings.downloadLinkSeconds = downloadLinkSeconds
        settings.accelRedirectPrefix = accelRedirectPrefix
        return settings
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let level = logLevel
        switch logFormat {
        case .json: LoggingSystem.bootstrap { label in var handler = JSONLogHandler(label: label); handler.logLevel = level; return handler }
        case .text: LoggingSystem.bootstrap { label in var handler = StreamLogHandler.standardError(label: label); handler.logLevel = level; return handler }
        }
        let logger = Logger(label: "keylight")

        let configuration: ServerConfiguration
        do {
            configuration = try ServerConfiguration(settings, environment: environment)
        } catch {
            Standard.error("keylight: error: \(error)")
            throw ExitCode(64)
        }

        let server: KeylightServer
        let (host, requestedPort) = (host, port)
        do {
            server = try await buildApplication(configuration: configuration, logger: logger) { channel in
                let port = channel.localAddress?.port ?? requestedPort
                Standard.line("keylight listening on http://\(host):\(port)")
            }
        } catch {
            Standard.error("keylight: error: cannot start: \(error)")
            throw ExitCode(1)
        }
        if let token = server.report.createdAdminToken {
            let file = adminTokenFile ?? ProcessInfo.processInfo.environment["KEYLIGHT_ADMIN_TOKEN_FILE"].flatMap { $0.isEmpty ? nil : $0 }
            try AdminTokenOutput.deliver(token, file: file, what: "Admin API token")
        }
        // Where request handlers run: NIO's event loops (EventLoopExecutor.adopt), or Swift's pool.
        let tasksOn = await EventLoopExecutor.tasksRunOnEventLoops() ? "event_loops" : "swift_pool"
        logger.info("starting", metadata: [
            "database": .string(configuration.databaseURL.map(Database.redacted(url:)) ?? database.databasePath), "tenants_with_keys": .stringConvertible(server.report.signingKids.count),
            "migrations_applied": .stringConvertible(server.report.appliedMigrations.count),
            "tasks_on": .string(tasksOn),
        ])
        guard try await server.run(shutdownTimeout: .seconds(settings.shutdownTimeoutSeconds), logger: logger) else {
            Standard.error("keylight: error: shut down with buffered writes the database did not take (see the log)")
            throw ExitCode(1)
        }
    }
}

/// A time as `90s`, `30m`, `1h`, `1d` (or plain seconds).
struct IntervalOption: ExpressibleByArgument {
    let seconds: Int64

    init(seconds: Int64) { self.seconds = seconds }

    init?(argument: String) {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        var text = argument.lowercased()
        var unit: Int64 = 1
        if let last = text.last, let multiplier = units[last] {
            unit = multiplier
            text.removeLast()
        }
        guard let value = Int64(text), value > 0, value <= 365 * 86_400 / unit else { return nil }
        seconds = value * unit
    }

    var defaultValueDescription: String { seconds % 3_600 == 0 ? "\(seconds / 3_600)h" : "\(seconds)s" }
}

/// `RATE` or `RATE/BURST` requests per minute.
struct RateLimitOption: ExpressibleByArgument {
    let limit: RateLimit

    init?(argument: String) {
        let parts = argument.split(separator: "/").map { Int($0) }
        guard (1...2).contains(parts.count), let rate = parts[0], rate >= 0 else { return nil }
        let burst = parts.count == 2 ? parts[1] : max(1, rate / 4)
        guard let burst, burst >= 0 else { return nil }
        limit = .init(perMinute: rate, burst: burst)
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
