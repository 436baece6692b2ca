import Foundation
@testable import KeylightServer
import Testing

/// `keylight serve`'s options and environment, turned into the server's configuration.
@Suite struct ServeSettingsTests {
    @Test func optionsWinOverTheEnvironmentAndEmptyVariablesAreUnset() throws {
        let environment = [
            "KEYLIGHT_DATABASE_URL": "postgres://env@db/keylight", "KEYLIGHT_PUBLIC_URL": "https://env.example/",
            "KEYLIGHT_MASTER_KEY": "", "KEYLIGHT_ADMIN_TOKEN": "token", "KEYLIGHT_TRUSTED_PROXIES": "10.0.0.0/8",
            "KEYLIGHT_WEBHOOK_ALLOW_PRIVATE": "1", "KEYLIGHT_STRIPE_API_BASE": "",
        ]
        let fromEnvironment = try ServerConfiguration(ServeSettings(), environment: environment)
        #expect(fromEnvironment.databaseURL == "postgres://env@db/keylight")
        #expect(fromEnvironment.publicURL == "https://env.example")
        #expect(fromEnvironment.masterKey == nil)
        #expect(fromEnvironment.adminToken == "token")
        #expect(fromEnvironment.webhookAllowPrivate)
        #expect(fromEnvironment.stripeAPIBaseURL == "https://api.stripe.com")
        #expect(fromEnvironment.trustedProxies.trusts(IPAddress("10.1.2.3")!))

        var settings = ServeSettings()
        settings.databaseURL = "postgres://option@db/keylight"
        settings.publicURL = "http://option.example"
        settings.trustedProxies = "192.168.0.0/16"
        settings.rateLimitAddress = RateLimit(perMinute: 5, burst: 2)
        let fromOptions = try ServerConfiguration(settings, environment: environment)
        #expect(fromOptions.databaseURL == "postgres://option@db/keylight")
        #expect(fromOptions.publicURL == "http://option.example")
        #expect(!fromOptions.trustedProxies.trusts(IPAddress("10.1.2.3")!))
        #expect(fromOptions.trustedProxies.trusts(IPAddress("192.168.4.5")!))
        #expect(fromOptions.limits.perAddress == RateLimit(perMinute: 5, burst: 2))
        #expect(fromOptions.limits.perLicense == ServerLimits().perLicense)

        let bare = try ServerConfiguration(ServeSettings(), environment: [:])
        #expect(bare.databaseURL == nil && bare.publicURL == nil && bare.adminToken == nil && !bare.webhookAllowPrivate)
        #expect(bare.mail == nil && bare.backups == nil)
    }

    @Test func refusedSettingsNameTheirOption() {
        func refusal(_ change: (inout ServeSettings) -> Void, environment: [String: String] = [:]) -> String? {
            var settings = ServeSettings()
            change(&settings)
            do {
                _ = try ServerConfiguration(settings, environment: environment, readFile: { _ in nil })
                return nil
            } catch {
                return error.description
            }
        }
        #expect(refusal { $0.publicURL = "ftp://x.example" }?.contains("--public-url") == true)
        #expect(refusal({ _ in }, environment: ["KEYLIGHT_PADDLE_API_BASE": "not a url"])?.contains("--paddle-api-base") == true)
        #expect(refusal { $0.stripeAPIBase = "https://" }?.contains("--stripe-api-base") == true)
        #expect(refusal { $0.idleTimeoutSeconds = 0 }?.contains("--idle-timeout") == true)
        #expect(refusal { $0.maxConnections = 2_000_000 }?.contains("--max-connections") == true)
        #expect(refusal { $0.trustedProxies = "10.0.0.0/99" }?.contains("--trusted-proxies") == true)
        #expect(refusal { $0.insightsRetentionDays = 30 }?.contains("--insights-retention-days") == true)
        #expect(refusal { $0.lastSeenGatheringSeconds = -1 }?.contains("--last-seen-gathering") == true)
        #expect(refusal { $0.lastSeenGatheringSeconds = 3_601 }?.contains("--last-seen-gathering") == true)
        #expect(refusal { $0.backupDirectory = "/tmp/b"; $0.backupEverySeconds = 59 }?.contains("--backup-every") == true)
        #expect(refusal({ $0.backupDirectory = "/tmp/b" }, environment: ["KEYLIGHT_DATABASE_URL": "postgres://x@y/z"])?.contains("pg_dump") == true)
        #expect(refusal { $0.smtpURL = "smtp://u:p@mail.example:587" }?.contains("--mail-from") == true)
        #expect(refusal { $0.smtpURL = "smtp://u@mail.example:587"; $0.smtpPasswordFile = "/nowhere"; $0.mailFrom = "a@b.example" }?.contains("/nowhere") == true)
        #expect(refusal { $0.backupDirectory = "/tmp/b" } == nil)
    }

    @Test func lastSeenGatheringSetsTheValidationTimesSchedule() throws {
        #expect(try ServerConfiguration(ServeSettings(), environment: [:]).validationTimes == ValidationTimesSchedule())
        var settings = ServeSettings()
        settings.lastSeenGatheringSeconds = 0
        #expect(try ServerConfiguration(settings, environment: [:]).validationTimes == .everyFlush)
        settings.lastSeenGatheringSeconds = 45
        #expect(try ServerConfiguration(settings, environment: [:]).validationTimes.gathering == .seconds(45))
    }

    @Test func mailSettingsComeFromOptionsFilesAndTheEnvironment() throws {
        var settings = ServeSettings()
        settings.smtpPasswordFile = "/run/secrets/smtp"
        settings.mailRetrySeconds = 99_999
        let environment = ["KEYLIGHT_SMTP_URL": "smtp://sender@mail.example:587?tls=starttls", "KEYLIGHT_MAIL_FROM": "Acme <sales@acme.example>", "KEYLIGHT_SMTP_PASSWORD": "from-env"]
        let configuration = try ServerConfiguration(settings, environment: environment, readFile: { path in
            path == "/run/secrets/smtp" ? Data("from-file\n".utf8) : nil
        })
        let mail = try #require(configuration.mail)
        #expect(mail.smtp.password == "from-file")
        #expect(mail.from.address == "sales@acme.example")
        #expect(mail.retryBase == 3_600)

        settings.smtpPasswordFile = nil
        let fromEnvironment = try #require(try ServerConfiguration(settings, environment: environment).mail)
        #expect(fromEnvironment.smtp.password == "from-env")
    }
}
