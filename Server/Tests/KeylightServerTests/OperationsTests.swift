import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Logging
import KeylightServerTestSupport
import NIOConcurrencyHelpers
import Testing

/// Collects every log line (message and metadata) at trace level.
struct CapturingLogHandler: LogHandler {
    let lines: NIOLockedValueBox<[String]>
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        lines.withLockedValue { $0.append("\(event.level) \(event.message) \(all)") }
    }
}

@Suite(.timeLimit(.minutes(6))) struct OperationsTests {
    @Test func healthzAndRequestIds() async throws {
        try await Harness().run { client in
            let health = try await client.request(.get, "/healthz")
            #expect(health.status == .ok && health["status"] as? String == "ok")
            let given = try await client.request(.get, "/healthz", headers: [.init("X-Keylight-Request-Id")!: "abc-123"])
            #expect(given.headers[.init("X-Keylight-Request-Id")!] == "abc-123")
            let generated = try await client.request(.get, "/healthz")
            #expect(UUID(uuidString: generated.headers[.init("X-Keylight-Request-Id")!] ?? "") != nil)
            // Ids on error responses too, and hostile ids are replaced.
            let error = try await client.request(.get, "/acme/app/config", headers: [.init("X-Keylight-Request-Id")!: "bad id\u{7F}"])
            #expect(error.status == .unauthorized)
            #expect(UUID(uuidString: error.headers[.init("X-Keylight-Request-Id")!] ?? "") != nil)
        }
    }

    @Test func metricsCountRequestsActivationsAndValidations() async throws {
        try await Harness().run { client in
            let seed = try await client.seed(limit: 1)
            let instance = try #require(try await client.activate(seed, machine: "a")["instance_id"] as? String)
            _ = try await client.activate(seed, machine: "b")
            _ = try await client.validate(seed, instance: instance)
            let metrics = try await client.request(.get, "/metrics")
            #expect(metrics.status == .ok)
            #expect(metrics.headers[.contentType]?.hasPrefix("text/plain") == true)
            let text = metrics.text
            #expect(text.contains(#"keylight_http_requests_total{route="/{tenant}/{product}/activate",method="POST",status="200"} 1"#), "\(text.prefix(2000))")
            #expect(text.contains(#"keylight_http_requests_total{route="/{tenant}/{product}/activate",method="POST",status="409"} 1"#))
            #expect(text.contains("keylight_http_request_duration_seconds_bucket"))
            #expect(text.contains(#"keylight_activations_total{result="activated"} 1"#))
            #expect(text.contains(#"keylight_activations_total{result="limit_reached"} 1"#))
            #expect(text.contains(#"keylight_validations_total{result="valid"} 1"#))
        }
    }

    @Test func logsCarryRequestIdsAndNoSecrets() async throws {
        let lines = NIOLockedValueBox<[String]>([])
        var logger = Logger(label: "capture") { _ in CapturingLogHandler(lines: lines) }
        logger.logLevel = .trace
        let captured = NIOLockedValueBox<[String]>([])
        let receiver = try await RecordingServer { request, _ in .init(200, CheckoutTests.session) }
        var harness = Harness()
        harness.configuration.stripeAPIBaseURL = receiver.url
        try await harness.run(logger: logger) { client in
            // Outbound webhooks (the raw key of a minted license, the endpoint secret) and a checkout
            // (the checkout key, Stripe's secret key) run with the same logger.
            let (seed, checkoutKey) = try await CheckoutTests.configured(client)
            let endpointSecret = try await WebhookTests.register(client, url: receiver.url + "/hook")
            #expect(try await CheckoutTests.checkout(client, key: checkoutKey, CheckoutTests.body(seed)).status == .ok)
            let minted = try await client.mint(seed)
            try await client.server.webhooks.deliverDue()
            #expect(receiver.requests.contains { $0.text.contains(minted.key) })
            let instance = try #require(try await client.activate(seed)["instance_id"] as? String)
            _ = try await client.validate(seed, instance: instance)
            _ = try await client.request(.get, "/healthz", headers: [.init("X-Keylight-Request-Id")!: "trace-me-42"])
            _ = try await client.admin(.put, "/tenants/acme/stripe", ["webhook_secret": "whsec_secretvalue"])
            captured.withLockedValue { $0 = [
                seed.sdkKey, seed.licenseKey, minted.key, endpointSecret.secret, checkoutKey, "sk_test_abc",
                Base64.encode(client.server.keyRing.current["acme"]!.active.privateKey.rawRepresentation),
            ] }
        }
        await receiver.stop()
        let all = lines.withLockedValue { $0 }.joined(separator: "\n")
        #expect(!all.isEmpty)
        #expect(all.contains("trace-me-42") && all.contains("delivering webhook"))
        for secret in captured.withLockedValue({ $0 }) + [Harness.adminToken, "whsec_secretvalue"] {
            #expect(!all.contains(secret), "a secret reached the logs")
        }
    }

    @Test func migrationsAreNamedOrderedAndRecordedOnce() async throws {
        let path = try ConcurrencyTests.databaseFile()
        let database = try await Database.sqlite(path: path, logger: Harness.logger)
        let first = try await database.migrate(logger: Harness.logger)
        #expect(first == Migration.all.map(\.name))
        #expect(try await database.migrate(logger: Harness.logger).isEmpty)
        #expect(try await database.appliedMigrations() == Migration.all.map(\.name))
        // A database from a newer build is refused rather than misread.
        try await database.sql.raw("INSERT INTO keylight_migrations (name, applied_at) VALUES ('9999_future', 0)").run()
        await #expect(throws: StorageError.unknownMigration("9999_future", newestKnown: Migration.all.last?.name)) { try await database.migrate(logger: Harness.logger) }
        await database.close()
        #expect(SecretFile.permissions(of: path) == 0o600)
    }
}
