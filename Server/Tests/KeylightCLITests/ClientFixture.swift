import AsyncHTTPClient
import Foundation
import KeylightTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// `keylight serve` with tenant `acme` and product `app` (prefix ACME), the tenant's keyset written
/// to a file, and `keylight client` pointed at it: what the client command tests share.
struct ClientFixture {
    static let auth = [("Authorization", "Bearer t")]
    let directory: URL
    let server: ServerProcess
    let sdkKey: String
    let keysPath: URL
    var http: HTTPClient { HTTPClient.shared }

    static func start() async throws -> ClientFixture {
        let directory = try temporaryDirectory()
        let http = HTTPClient.shared
        let server = try await ServerProcess(database: directory.appendingPathComponent("s.sqlite").path, environment: ["KEYLIGHT_ADMIN_TOKEN": "t"])
        _ = try await server.request(.POST, "/admin/v1/tenants", headers: auth, json: #"{"id":"acme","name":"Acme"}"#, using: http)
        let product = try await server.request(.POST, "/admin/v1/tenants/acme/products", headers: auth, json: #"{"id":"app","name":"App","key_prefix":"ACME"}"#, using: http)
        let sdkKey = try #require(product.body["sdk_key"] as? String)
        var keysRequest = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/acme/.well-known/keylight-keys")
        keysRequest.method = .GET
        let keysPath = directory.appendingPathComponent("keys.json")
        try Data(try await http.execute(keysRequest, timeout: .seconds(10)).body.collect(upTo: 1 << 16).readableBytesView).write(to: keysPath)
        return ClientFixture(directory: directory, server: server, sdkKey: sdkKey, keysPath: keysPath)
    }

    /// An admin call on the server; answers the JSON body.
    @discardableResult
    func admin(_ method: HTTPMethod, _ path: String, _ json: String) async throws -> [String: Any] {
        try await server.request(method, "/admin/v1" + path, headers: Self.auth, json: json, using: http).body
    }

    /// A new license of key type `keyTypeId` of product `app`; answers its key.
    func license(_ keyTypeId: String) async throws -> String {
        try #require(try await admin(.POST, "/tenants/acme/products/app/licenses", #"{"key_type_id":"\#(keyTypeId)"}"#)["license_key"] as? String)
    }

    /// `keylight client` for product `app` with its state in `store` (a directory name).
    func client(_ store: String, _ arguments: [String], server url: String? = nil, options: [String] = []) async throws -> CLI.Result {
        try await CLI.run(["client", "--server", url ?? "http://127.0.0.1:\(server.port)", "--tenant", "acme", "--product", "app", "--sdk-key", sdkKey,
                           "--keys", keysPath.path, "--store", directory.appendingPathComponent(store).path] + options + arguments)
    }

    /// A client command's JSON output.
    static func json(_ result: CLI.Result) throws -> [String: Any] {
        try #require((try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any], "\(result.stdout) \(result.stderr)")
    }
}
