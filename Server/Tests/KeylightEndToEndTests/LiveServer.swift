import Crypto
import Foundation
import KeylightTestSupport
import Keylight
import KeylightHTTPTransport
import KeylightCore
import KeylightServer
import Logging

/// A real KeylightServer on a free loopback port, on a file database that outlives it (so a
/// test can stop it and start it again), driven over HTTP.
final class LiveServer: @unchecked Sendable {
    // @unchecked: `task` and `port` are set once in `start` before the instance is shared.
    let databasePath: String
    private(set) var port = 0

    /// The server ended without listening (and without an error of its own).
    struct StartError: Error, CustomStringConvertible {
        var description: String { "the server stopped before it listened" }
    }
    private var task: Task<Void, any Error>?
    static let adminToken = "e2e-admin"

    init() throws {
        let directory = try temporaryDirectory("keylight-e2e")
        databasePath = directory.appendingPathComponent("server.sqlite").path
    }

    func start(configure: @Sendable (inout ServerConfiguration) -> Void = { _ in }) async throws {
        var logger = Logger(label: "e2e")
        logger.logLevel = .critical
        var configuration = ServerConfiguration()
        configuration.databasePath = databasePath
        configuration.port = 0
        configuration.adminToken = Self.adminToken
        configuration.limits = .unlimited
        // The webhook receivers of these tests listen on loopback.
        configuration.webhookAllowPrivate = true
        configure(&configuration)
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let server = try await buildApplication(configuration: configuration, logger: logger) { channel in
            continuation.yield(channel.localAddress?.port ?? 0)
            continuation.finish()
        }
        // Finishing the stream when run() ends means a server that fails before listening ends
        // the wait too (with its error), instead of leaving it waiting forever.
        let running = Task {
            defer { continuation.finish() }
            try await server.application.run()
        }
        task = running
        var iterator = ports.makeAsyncIterator()
        guard let listening = await iterator.next() else {
            _ = try await running.value
            throw StartError()
        }
        port = listening
    }

    /// Stops the server and waits until its port refuses connections.
    func stop() async {
        task?.cancel()
        _ = await task?.result
        task = nil
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    func admin(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> [String: Any] {
        try await call(method, "/admin/v1" + path, body, bearer: Self.adminToken).json
    }

    /// Any route, with an optional bearer token and extra headers; answers the status and the JSON body.
    func call(_ method: String, _ path: String, _ body: [String: Any]? = nil, raw: Data? = nil, bearer: String? = nil, headers: [String: String] = [:]) async throws -> (status: Int, json: [String: Any], headers: [String: String]) {
        var all = ["Content-Type": "application/json"].merging(headers) { $1 }
        if let bearer { all["Authorization"] = "Bearer \(bearer)" }
        let data = try raw ?? body.map { try JSONSerialization.data(withJSONObject: $0) }
        let response = try await HTTPClientTransport(baseURL: url).send(TransportRequest(method: method, path: path, headers: all, body: data))
        return (response.status, (try? JSONSerialization.jsonObject(with: response.body) as? [String: Any]) ?? [:], response.headers)
    }

    /// The tenant keyset (protocol 6.1), as an app build pins it: next, active and grace keys.
    func tenantKeyset(tenant: String = "acme") async throws -> Keyset {
        let response = try await HTTPClientTransport(baseURL: url).send(TransportRequest(method: "GET", path: "/\(tenant)/.well-known/keylight-keys"))
        return try Keyset(json: response.body)
    }

    /// The kid the tenant signs with now.
    func tenantKeyset(tenant: String = "acme", primaryKid: Bool) async throws -> String? {
        let response = try await HTTPClientTransport(baseURL: url).send(TransportRequest(method: "GET", path: "/\(tenant)/.well-known/keylight-keys"))
        return (try JSONSerialization.jsonObject(with: response.body) as? [String: Any])?["primary_kid"] as? String
    }

    func keyset() async throws -> Keyset {
        let response = try await HTTPClientTransport(baseURL: url).send(TransportRequest(method: "GET", path: "/.well-known/keylight-keys.json"))
        return try Keyset(json: response.body)
    }

    /// Tenant `acme`, product `app` (14-day trial, no free tier) and a license of a 2-seat key type.
    func seed() async throws -> (sdkKey: String, licenseKey: String, licenseId: String) {
        _ = try await admin("POST", "/tenants", ["id": "acme", "name": "Acme"])
        let product = try await admin("POST", "/tenants/acme/products", ["id": "app", "name": "App", "key_prefix": "ACME", "trial_duration_days": 14, "free_tier_enabled": false])
        _ = try await admin("POST", "/tenants/acme/products/app/key-types", [
            "id": "pro", "display_name": "Pro", "activation_limit": 2, "duration_days": NSNull(), "fallback_access": false, "entitlements": ["pro", "export"],
        ])
        let license = try await admin("POST", "/tenants/acme/products/app/licenses", ["key_type_id": "pro", "customer_email": "e2e@example.com"])
        return (product["sdk_key"] as! String, license["license_key"] as! String, license["id"] as! String)
    }
}
