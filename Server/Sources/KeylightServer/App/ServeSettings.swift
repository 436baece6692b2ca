import Foundation

/// What `keylight serve` was asked for on its command line, before the environment fills in what
/// the options left out and every value is checked: ``ServerConfiguration/init(_:environment:readFile:)``
/// turns it into the server's configuration. Kept apart from the command so the rules (an option
/// wins over its variable, an empty variable is unset, which values are refused) are tested
/// without starting a process.
public struct ServeSettings: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    public var databasePath = "./keylight.sqlite"
    /// `--database-url`; else `KEYLIGHT_DATABASE_URL`.
    public var databaseURL: String?
    public var masterKeyFile: String?
    public var poolSize = 4
    public var keyRefreshSeconds = 10
    public var webhookPollSeconds = 2
    /// `--webhook-allow-private`; else `KEYLIGHT_WEBHOOK_ALLOW_PRIVATE=1`.
    public var webhookAllowPrivate = false
    /// `--public-url`; else `KEYLIGHT_PUBLIC_URL`.
    public var publicURL: String?
    /// `--stripe-api-base`; else `KEYLIGHT_STRIPE_API_BASE`.
    public var stripeAPIBase: String?
    /// `--paddle-api-base`; else `KEYLIGHT_PADDLE_API_BASE`.
    public var paddleAPIBase: String?
    public var appStoreRootCertificateFiles: [String] = []
    public var requestTimeoutSeconds = 30
    public var idleTimeoutSeconds = 60
    public var shutdownTimeoutSeconds = 30
    public var maxConnections = 10_000
    /// `--trusted-proxies`; else `KEYLIGHT_TRUSTED_PROXIES`.
    public var trustedProxies: String?
    public var insightsRetentionDays = 90
    /// `--last-seen-gathering`: seconds a busy server gathers validation times (0: every flush).
    public var lastSeenGatheringSeconds = 30
    public var backupDirectory: String?
    public var backupEverySeconds: Int64 = 3_600
    public var backupKeep = 48
    /// `--smtp-url`; else `KEYLIGHT_SMTP_URL`.
    public var smtpURL: String?
    /// A file holding the SMTP password; else `KEYLIGHT_SMTP_PASSWORD`.
    public var smtpPasswordFile: String?
    public var smtpCAFile: String?
    /// `--mail-from`; else `KEYLIGHT_MAIL_FROM`.
    public var mailFrom: String?
    public var mailRetrySeconds = 30
    public var rateLimitAddress: RateLimit?
    public var rateLimitLicense: RateLimit?
    /// `--artifacts-dir`; else `KEYLIGHT_ARTIFACTS_DIR`.
    public var artifactsDirectory: String?
    public var maxArtifactBytes: Int64 = 2 << 30
    public var downloadLinkSeconds: Int64 = 3_600
    public var accelRedirectPrefix: String?

    public init() {}

    /// The PostgreSQL URL from the option, else the environment; nil: SQLite at ``databasePath``.
    public func resolvedDatabaseURL(environment: [String: String]) -> String? {
        Self.databaseURL(option: databaseURL, environment: environment)
    }

    /// `--database-url`, else `KEYLIGHT_DATABASE_URL` (every command that opens the database).
    public static func databaseURL(option: String?, environment: [String: String]) -> String? {
        option ?? environment.setting("KEYLIGHT_DATABASE_URL")
    }
}

/// A setting `keylight serve` cannot start with; the description is the message for the operator.
public struct ServeSettingsError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

extension ServerConfiguration {
    /// The configuration `settings` and `environment` describe, or the first setting that is
    /// refused. `readFile` reads the SMTP password file (injected for tests).
    public init(
        _ settings: ServeSettings, environment: [String: String],
        readFile: (String) -> Data? = { FileManager.default.contents(atPath: $0) }
    ) throws(ServeSettingsError) {
        self.init()
        host = settings.host
        port = settings.port
        databasePath = settings.databasePath
        databaseURL = settings.resolvedDatabaseURL(environment: environment)
        masterKeyPath = settings.masterKeyFile
        masterKey = environment.setting("KEYLIGHT_MASTER_KEY")
        adminToken = environment.setting("KEYLIGHT_ADMIN_TOKEN")
        poolSize = settings.poolSize
        keyRefreshInterval = .seconds(max(1, settings.keyRefreshSeconds))
        webhookPollInterval = .seconds(max(1, settings.webhookPollSeconds))
        webhookAllowPrivate = settings.webhookAllowPrivate || environment["KEYLIGHT_WEBHOOK_ALLOW_PRIVATE"] == "1"
        if let url = settings.publicURL ?? environment.setting("KEYLIGHT_PUBLIC_URL") {
            publicURL = try Self.baseURL(url, option: "--public-url")
        }
        if let base = settings.stripeAPIBase ?? environment.setting("KEYLIGHT_STRIPE_API_BASE") {
            stripeAPIBaseURL = try Self.baseURL(base, option: "--stripe-api-base")
        }
        appStoreRootCertificateFiles = settings.appStoreRootCertificateFiles
        if let base = settings.paddleAPIBase ?? environment.setting("KEYLIGHT_PADDLE_API_BASE") {
            paddleAPIBaseURL = try Self.baseURL(base, option: "--paddle-api-base")
        }
        guard (1...86_400).contains(settings.requestTimeoutSeconds), (1...86_400).contains(settings.idleTimeoutSeconds),
              (1...1_000_000).contains(settings.maxConnections), (1...3_600).contains(settings.shutdownTimeoutSeconds) else {
            throw ServeSettingsError("--request-timeout and --idle-timeout must be 1-86400 seconds, --shutdown-timeout 1-3600, --max-connections 1-1000000")
        }
        connections.requestTimeout = .seconds(settings.requestTimeoutSeconds)
        connections.idleTimeout = .seconds(settings.idleTimeoutSeconds)
        connections.maxConnections = settings.maxConnections
        if let list = settings.trustedProxies ?? environment.setting("KEYLIGHT_TRUSTED_PROXIES") {
            guard let proxies = TrustedProxies(list: list) else {
                throw ServeSettingsError("--trusted-proxies must be a comma-separated list of addresses or CIDR networks")
            }
            trustedProxies = proxies
        }
        guard (31...3_650).contains(settings.insightsRetentionDays) else {
            throw ServeSettingsError("--insights-retention-days must be 31-3650 (the longest window is 30 days)")
        }
        insightsRetentionDays = Int64(settings.insightsRetentionDays)
        guard (0...3_600).contains(settings.lastSeenGatheringSeconds) else {
            throw ServeSettingsError("--last-seen-gathering must be 0-3600 seconds")
        }
        validationTimes = .gathering(seconds: settings.lastSeenGatheringSeconds)
        if let directory = settings.backupDirectory {
            guard (1...100_000).contains(settings.backupKeep), settings.backupEverySeconds >= 60 else {
                throw ServeSettingsError("--backup-keep must be 1-100000 and --backup-every at least 1m")
            }
            guard databaseURL == nil else {
                throw ServeSettingsError("--backup-dir backs up the SQLite database; back PostgreSQL up with pg_dump (see docs/operating/backups.md)")
            }
            backups = BackupSchedule(directory: directory, interval: .seconds(settings.backupEverySeconds), keep: settings.backupKeep)
        }
        if let url = settings.smtpURL ?? environment.setting("KEYLIGHT_SMTP_URL") {
            mail = try Self.mail(url: url, settings, environment: environment, readFile: readFile)
        }
        releases.artifactsDirectory = settings.artifactsDirectory ?? environment.setting("KEYLIGHT_ARTIFACTS_DIR")
        guard (1...(1 << 40)).contains(settings.maxArtifactBytes), (60...(30 * 86_400)).contains(settings.downloadLinkSeconds) else {
            throw ServeSettingsError("--max-artifact-bytes must be 1 to 2^40 and --download-link-seconds 60-2592000")
        }
        releases.maxArtifactBytes = settings.maxArtifactBytes
        releases.downloadLinkSeconds = settings.downloadLinkSeconds
        if let prefix = settings.accelRedirectPrefix {
            guard prefix.hasPrefix("/"), prefix.hasSuffix("/"), prefix.utf8.count <= 200, !prefix.contains(".."),
                  prefix.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x3F && $0 != 0x23 }) else {
                throw ServeSettingsError("--accel-redirect-prefix is a path that starts and ends with /, such as /protected-artifacts/")
            }
            releases.accelRedirectPrefix = prefix
        }
        if let limit = settings.rateLimitAddress { limits.perAddress = limit }
        if let limit = settings.rateLimitLicense { limits.perLicense = limit }
    }

    /// An http(s) URL with a host, without its trailing slash.
    private static func baseURL(_ text: String, option: String) throws(ServeSettingsError) -> String {
        guard let url = URL(string: text), url.scheme == "https" || url.scheme == "http", url.host != nil else {
            throw ServeSettingsError("\(option) must be an http(s) URL")
        }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }

    private static func mail(
        url: String, _ settings: ServeSettings, environment: [String: String], readFile: (String) -> Data?
    ) throws(ServeSettingsError) -> MailConfiguration {
        do {
            let password = try settings.smtpPasswordFile.map { path -> String in
                guard let data = readFile(path) else { throw SMTPError.unsupported("--smtp-password-file: \(path) cannot be read") }
                return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .newlines)
            } ?? environment.setting("KEYLIGHT_SMTP_PASSWORD")
            var smtp = try SMTPSettings(url: url, password: password)
            smtp.caFile = settings.smtpCAFile
            guard let from = settings.mailFrom ?? environment.setting("KEYLIGHT_MAIL_FROM") else {
                throw SMTPError.unsupported("--smtp-url needs --mail-from \"Name <address>\"")
            }
            var mail = MailConfiguration(smtp: smtp, from: try MailAddress(parsing: from))
            mail.retryBase = Double(min(max(settings.mailRetrySeconds, 1), 3_600))
            mail.pollInterval = .milliseconds(500)
            return mail
        } catch {
            throw ServeSettingsError("\(error)")
        }
    }
}

extension [String: String] {
    /// A variable's value; an empty one counts as unset (`KEY=` in a unit file).
    func setting(_ name: String) -> String? {
        self[name].flatMap { $0.isEmpty ? nil : $0 }
    }
}
