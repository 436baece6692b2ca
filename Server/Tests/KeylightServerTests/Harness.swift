import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeylightCore
@testable import KeylightServer
import Logging
import NIOConcurrencyHelpers
import NIOCore
import SQLKit
import Testing

/// A wall clock tests move by hand.
final class TestClock: WallClock {
    private let seconds: NIOLockedValueBox<Int64>
    init(_ start: Int64 = 1_781_076_246) { seconds = NIOLockedValueBox(start) }
    var now: Date { Date(timeIntervalSince1970: TimeInterval(seconds.withLockedValue { $0 })) }
    func advance(by delta: Int64) { seconds.withLockedValue { $0 += delta } }
}

/// One HTTP reply, with the JSON body parsed on demand.
struct Reply: Sendable {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var body: Data

    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    var text: String { String(decoding: body, as: UTF8.self) }
    subscript(key: String) -> Any? { json[key] }
    var code: String? { json["code"] as? String }
    var lease: Lease? {
        guard let object = json["lease"], let data = try? JSONSerialization.data(withJSONObject: object) else { return nil }
        return try? Lease(json: data)
    }
}

/// Builds a server on an in-memory (or file) database with a test clock and a known admin
/// token, and runs a test against it through HummingbirdTesting.
struct Harness {
    static let adminToken = "test-admin-token"
    var configuration = ServerConfiguration()
    let clock: TestClock

    init(limits: ServerLimits = .unlimited, databasePath: String? = nil, clock: TestClock = TestClock()) {
        self.clock = clock
        configuration.databasePath = databasePath
        configuration.adminToken = Self.adminToken
        configuration.limits = limits
        configuration.clock = clock
        configuration.port = 0
        configuration.activityFlushInterval = .milliseconds(50)
        // Tests deliver webhooks by calling the dispatcher themselves, with the test clock.
        configuration.webhookPollInterval = .seconds(3_600)
        // Tests work bulk jobs through by hand (``BulkJobs/runPending(batch:maxItems:)``).
        configuration.bulkJobInterval = .seconds(3_600)
        // Tests sweep for due reminders by hand (``ReminderService/sweep(batch:maxBatches:)``).
        configuration.reminderSweepInterval = .seconds(3_600)
        // Receivers in tests listen on loopback; one test turns this off to see the refusal.
        configuration.webhookAllowPrivate = true
        // The lowest bcrypt cost: dashboard sign-ins in tests should not take 0.2 s each.
        configuration.bcryptCost = 4
        // Release files of this test's own (with PostgreSQL the default is the working directory).
        configuration.releases.artifactsDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("keylight-test-artifacts-\(UUID().uuidString)").path
    }

    static var logger: Logger {
        var logger = Logger(label: "keylight-test")
        logger.logLevel = .critical
        return logger
    }

    func run(_ mode: TestingSetup = .router, logger: Logger = Harness.logger, _ body: @escaping @Sendable (Client) async throws -> Void) async throws {
        let server = try await buildApplication(configuration: configuration, logger: logger)
        try await server.application.test(mode) { client in
            try await body(Client(client: client, server: server, clock: clock))
        }
    }
}

/// What a seeded product gives the tests.
struct Seed: Sendable {
    var tenant = "acme"
    var product = "app"
    var sdkKey: String
    var keyType: String
    var licenseKey: String
    var licenseId: String
}

struct Client: Sendable {
    let client: any TestClientProtocol
    let server: KeylightServer
    let clock: TestClock

    var database: Database { server.database }

    func request(_ method: HTTPRequest.Method, _ uri: String, headers: HTTPFields = [:], body: String? = nil) async throws -> Reply {
        try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }) { response in
            Reply(status: response.status, headers: response.headers, body: Data(response.body.readableBytesView))
        }
    }

    func admin(_ method: HTTPRequest.Method, _ path: String, _ body: [String: Any]? = nil, token: String? = Harness.adminToken) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        let text = try body.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
        return try await request(method, "/admin/v1" + path, headers: headers, body: text)
    }

    func sdk(_ action: String, _ body: [String: Any], seed: Seed, sdkKey: String? = nil, headers extra: HTTPFields = [:]) async throws -> Reply {
        try await sdkRaw(action, body: String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self), seed: seed, sdkKey: sdkKey, headers: extra)
    }

    func sdkRaw(_ action: String, body: String?, seed: Seed, sdkKey: String? = nil, method: HTTPRequest.Method = .post, path: String? = nil, headers extra: HTTPFields = [:]) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json"]
        headers[.init("X-Keylight-SDK-Key")!] = sdkKey ?? seed.sdkKey
        headers.append(contentsOf: extra)
        return try await request(method, path ?? "/\(seed.tenant)/\(seed.product)/\(action)", headers: headers, body: body)
    }

    /// Tenant `acme`, product `app` (prefix ACME, 14-day trial, free tier on), a key type and one license.
    func seed(
        limit: Int = 3, fallback: Bool = false, durationDays: Int? = nil, ttl: Int64? = nil,
        entitlements: [String] = ["pro", "sync"], expiresAt: Int64? = nil, email: String = "buyer@example.com",
        keyTypeFields: [String: Any] = [:]
    ) async throws -> Seed {
        if try await database.tenant(id: "acme") == nil {
            let tenant = try await admin(.post, "/tenants", ["id": "acme", "name": "Acme"])
            #expect(tenant.status == .created)
        }
        var sdkKey = ""
        let product = try await admin(.post, "/tenants/acme/products", [
            "id": "app", "name": "App", "key_prefix": "ACME", "trial_duration_days": 14, "free_tier_enabled": true,
        ])
        if product.status == .created {
            sdkKey = try #require(product["sdk_key"] as? String)
            try await database.sql.raw("INSERT INTO settings (name, value) VALUES ('test_sdk_key', \(bind: sdkKey))").run()
        } else {
            sdkKey = try #require(try await database.setting("test_sdk_key"))
        }
        let keyTypeId = "kt\(UUID().uuidString.prefix(8).lowercased())"
        var keyType: [String: Any] = [
            "id": keyTypeId, "display_name": "Pro", "activation_limit": limit, "duration_days": durationDays ?? NSNull(),
            "fallback_access": fallback, "entitlements": entitlements,
        ]
        if let ttl { keyType["lease_ttl_seconds"] = ttl }
        keyType.merge(keyTypeFields) { $1 }
        let createdKeyType = try await admin(.post, "/tenants/acme/products/app/key-types", keyType)
        #expect(createdKeyType.status == .created, "\(createdKeyType.text)")
        var licenseBody: [String: Any] = ["key_type_id": keyTypeId, "customer_email": email]
        if let expiresAt { licenseBody["expires_at"] = expiresAt }
        let license = try await admin(.post, "/tenants/acme/products/app/licenses", licenseBody)
        #expect(license.status == .created, "\(license.text)")
        return Seed(sdkKey: sdkKey, keyType: keyTypeId, licenseKey: try #require(license["license_key"] as? String), licenseId: try #require(license["id"] as? String))
    }

    /// Another license of the seed's key type.
    func mint(_ seed: Seed, expiresAt: Int64? = nil) async throws -> (key: String, id: String) {
        var body: [String: Any] = ["key_type_id": seed.keyType]
        if let expiresAt { body["expires_at"] = expiresAt }
        let reply = try await admin(.post, "/tenants/acme/products/app/licenses", body)
        return (try #require(reply["license_key"] as? String), try #require(reply["id"] as? String))
    }

    func activate(_ seed: Seed, key: String? = nil, machine: String? = "machine-1", name: String = "Mac") async throws -> Reply {
        var body: [String: Any] = ["license_key": key ?? seed.licenseKey, "instance_name": name]
        if let machine { body["machine_hash"] = machine }
        return try await sdk("activate", body, seed: seed)
    }

    func validate(_ seed: Seed, instance: String, key: String? = nil) async throws -> Reply {
        try await sdk("validate", ["license_key": key ?? seed.licenseKey, "instance_id": instance], seed: seed)
    }

    /// The keyset as the public endpoint serves it.
    func keyset() async throws -> Keyset {
        let reply = try await request(.get, "/.well-known/keylight-keys.json")
        return try Keyset(json: reply.body)
    }

    func count(_ sql: String) async throws -> Int {
        try await database.sql.raw(SQLQueryString(sql)).first(decodingColumn: "n", as: Int.self) ?? -1
    }
}

