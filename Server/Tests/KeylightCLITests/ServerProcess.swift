import AsyncHTTPClient
import Foundation
import KeylightTestSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// A `keylight serve` child process on a free port, driven over HTTP like any client would.
final class ServerProcess: Sendable {
    let process: Process
    let output: PipeCollector
    let port: Int

    /// Starts the server and waits until it prints its listening address.
    init(database: String, environment: [String: String] = [:], arguments: [String] = []) async throws {
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["serve", "--port", "0", "--db", database, "--log-level", "warning"] + arguments
        var env = ProcessInfo.processInfo.environment
        env["KEYLIGHT_ADMIN_TOKEN"] = nil
        env.merge(environment) { $1 }
        process.environment = env
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let output = PipeCollector(out)
        self.process = process
        self.output = output
        var found: Int?
        for _ in 0..<600 where found == nil {
            try await Task.sleep(for: .milliseconds(50))
            let text = output.text
            if let range = text.range(of: "listening on http://127.0.0.1:") {
                found = Int(text[range.upperBound...].prefix { $0.isNumber })
            }
            if !process.isRunning { break }
        }
        guard let found else {
            process.terminate()
            throw ServerProcessError(output: output.text)
        }
        port = found
    }

    var stdout: String { output.text }

    /// Sends SIGTERM and waits for the exit status.
    func terminate() async -> Int32 {
        kill(process.processIdentifier, SIGTERM)
        for _ in 0..<400 where process.isRunning {
            try? await Task.sleep(for: .milliseconds(50))
        }
        // Reading the status of a live process traps: a server that ignored SIGTERM is killed.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        for _ in 0..<100 where process.isRunning { try? await Task.sleep(for: .milliseconds(50)) }
        return process.isRunning ? -1 : process.terminationStatus
    }

    func request(_ method: HTTPMethod, _ path: String, headers: [(String, String)] = [], json: String? = nil, timeout: TimeAmount = .seconds(30), using client: HTTPClient) async throws -> (status: Int, body: [String: Any]) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        let response = try await client.execute(request, timeout: timeout)
        let body = try await response.body.collect(upTo: 1 << 20)
        let object = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any] ?? [:]
        return (Int(response.status.code), object)
    }
}

extension ServerProcess {
    /// Creates tenant acme, product app (prefix ACME), key type pro with `seats` and one license
    /// through the admin API; answers the SDK key, the license key and the license id.
    func seedLicense(token: String, seats: Int = 1_000, entitlements: String = "[]") async throws -> (sdkKey: String, key: String, licenseId: String) {
        let (http, auth) = (HTTPClient.shared, [("Authorization", "Bearer \(token)")])
        _ = try await request(.POST, "/admin/v1/tenants", headers: auth, json: #"{"id":"acme","name":"Acme"}"#, using: http)
        let product = try await request(.POST, "/admin/v1/tenants/acme/products", headers: auth, json: #"{"id":"app","name":"App","key_prefix":"ACME","trial_duration_days":14,"free_tier_enabled":false}"#, using: http)
        _ = try await request(.POST, "/admin/v1/tenants/acme/products/app/key-types", headers: auth, json: #"{"id":"pro","display_name":"Pro","activation_limit":\#(seats),"duration_days":null,"fallback_access":false,"entitlements":\#(entitlements)}"#, using: http)
        let license = try await request(.POST, "/admin/v1/tenants/acme/products/app/licenses", headers: auth, json: #"{"key_type_id":"pro"}"#, using: http)
        guard let sdkKey = product.body["sdk_key"] as? String, let key = license.body["license_key"] as? String, let id = license.body["id"] as? String else {
            throw ServerProcessError(output: "seeding through the admin API failed: \(product.status) \(license.status)")
        }
        return (sdkKey, key, id)
    }
}

struct ServerProcessError: Error, CustomStringConvertible {
    let output: String
    var description: String { "keylight serve did not start; it printed: \(output)" }
}
