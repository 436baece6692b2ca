import Foundation
import KeylightCore

/// How the server answered, sorted by what the SDK should do about it.
enum ServerReply<Value: Sendable>: Sendable {
    case success(Value)
    /// The server decided about this license or instance (4xx with a license-level code).
    case rejected(KeylightError)
    /// Nothing was decided (offline, 5xx, 429, malformed reply): keep the state and retry later.
    case transient(KeylightError, retryAfter: Int?)
}

/// The SDK side of protocol section 2.
struct KeylightClient: Sendable {
    let transport: any Transport
    let tenantId: String
    let productId: String
    let sdkKey: String
    let mode: VerificationMode
    let verification: ResponseVerification
    let clock: any WallClock
    /// The app's version, sent as `app_version` (nil: not sent).
    var appVersion: String?
    /// Whether the SDK, platform and app versions go with each request (protocol 6.8).
    var sendsTelemetry = true
    /// Reads a request that got no answer (see ``NetworkFailure``).
    var networkFailure = NetworkFailure.live
    let sdkVersion = Keylight.sdkVersion

    /// A reply and how its signature checked out.
    struct Exchange<Value: Sendable>: Sendable {
        var reply: ServerReply<Value>
        var verification: SignatureCheck
    }

    /// What the server says about the license beside the lease (unsigned; for display).
    protocol LicenseDetails {
        var customer_email: String? { get }
        var key_type_name: String? { get }
        var upgrade_url: String? { get }
    }

    struct ActivateBody: Decodable, Sendable, LicenseDetails {
        var instance_id: String
        var license_expires_at: Int64?
        var lease: Lease
        var customer_email: String?
        var key_type_name: String?
        var upgrade_url: String?
        /// Floating seats only: validate again within this many seconds or lose the seat.
        var heartbeat_seconds: Int?
        /// More seats are in use than the license's limit (its overage allows it).
        var over_limit: Bool?
    }

    struct ValidateBody: Decodable, Sendable, LicenseDetails {
        var valid: Bool
        var license_expires_at: Int64?
        var lease: Lease
        var customer_email: String?
        var key_type_name: String?
        var upgrade_url: String?
        var config: SignedProductConfig?
        var heartbeat_seconds: Int?
        var over_limit: Bool?
    }

    struct KeylessBody: Decodable, Sendable {
        var config: SignedProductConfig
    }

    func activate(key: String, instanceName: String, machineHash: String, freeTierInstanceId: String?) async -> Exchange<ActivateBody> {
        var body: [String: String] = ["license_key": key, "instance_name": instanceName, "machine_hash": machineHash]
        if let freeTierInstanceId { body["free_tier_instance_id"] = freeTierInstanceId }
        return await post("activate", body)
    }

    /// An App Store exchange's answer: an activation, plus the license's key.
    struct AppStoreActivateBody: Decodable, Sendable, LicenseDetails {
        var instance_id: String
        var license_expires_at: Int64?
        var lease: Lease
        var customer_email: String?
        var key_type_name: String?
        var upgrade_url: String?
        var heartbeat_seconds: Int?
        var over_limit: Bool?
        var license_key: String
    }

    func activate(appStoreTransaction: String, instanceName: String, machineHash: String) async -> Exchange<AppStoreActivateBody> {
        await post("appstore/activate", ["signed_transaction": appStoreTransaction, "instance_name": instanceName, "machine_hash": machineHash])
    }

    func validate(key: String, instanceId: String, machineHash: String) async -> Exchange<ValidateBody> {
        await post("validate", ["license_key": key, "instance_id": instanceId, "machine_hash": machineHash])
    }

    func deactivate(key: String, instanceId: String) async -> Exchange<EmptyBody> {
        await post("deactivate", ["license_key": key, "instance_id": instanceId])
    }

    func config() async -> Exchange<SignedProductConfig> {
        await exchange(TransportRequest(method: "GET", path: "/\(tenantId)/\(productId)/config", headers: headers()))
    }

    func keyless(instanceId: String, state: String, machineHash: String) async -> Exchange<KeylessBody> {
        await post("keyless", ["instance_id": instanceId, "state": state, "machine_hash": machineHash])
    }

    struct EmptyBody: Decodable, Sendable {}

    struct ReceivedBody: Decodable, Sendable {
        var received: Bool
    }

    /// Asks the server to mail the keys bought with `email` (answered alike whether or not any were).
    func lostKey(email: String) async -> Exchange<ReceivedBody> {
        await post("lost-key", ["email": email])
    }

    func instances(key: String) async -> Exchange<SeatsBody> {
        await post("instances", ["license_key": key])
    }

    struct OfflineResponseBody: Decodable, Sendable {
        var response: String
    }

    func offlineActivate(key: String, request: String) async -> Exchange<OfflineResponseBody> {
        await post("offline/activate", ["license_key": key, "request": request])
    }

    func offlineDeactivate(key: String, proof: String) async -> Exchange<EmptyBody> {
        await post("offline/deactivate", ["license_key": key, "proof": proof])
    }

    private func headers() -> [String: String] {
        [
            "X-Keylight-SDK-Key": sdkKey,
            "X-Keylight-Request-Id": UUID().uuidString.lowercased(),
            "Content-Type": "application/json",
            "Accept": "application/json",
        ]
    }

    private func post<T: Decodable & Sendable>(_ action: String, _ fields: [String: String]) async -> Exchange<T> {
        var body = fields
        if sendsTelemetry {
            body["sdk_version"] = sdkVersion
            body["sdk"] = "swift"
            body["platform"] = Self.platform
            if let appVersion = appVersion.flatMap(Self.telemetryValue) { body["app_version"] = appVersion }
        }
        let data = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data()
        return await exchange(TransportRequest(method: "POST", path: "/\(tenantId)/\(productId)/\(action)", headers: headers(), body: data))
    }

    /// Sends with a fresh nonce (unless verification is disabled) and checks the signature. In
    /// enforced mode a reply that fails is turned into a transient failure, so it changes nothing.
    private func exchange<T: Decodable & Sendable>(_ request: TransportRequest) async -> Exchange<T> {
        var request = request
        let nonce = mode == .disabled ? nil : ResponseNonce()
        if let nonce { request.headers["X-Keylight-Nonce"] = nonce.header }
        let response: TransportResponse
        do {
            response = try await transport.send(request)
        } catch {
            return Exchange(reply: .transient(networkFailure.error(for: error), retryAfter: nil), verification: .notRequested)
        }
        guard let nonce else { return Exchange(reply: Self.classify(response), verification: .notRequested) }
        let result = verification.check(response, nonce: nonce, path: request.path, now: clock.unixSeconds)
        if mode == .enforced, case .failed(let reason) = result {
            return Exchange(reply: .transient(.signatureVerificationFailed(reason), retryAfter: nil), verification: result)
        }
        return Exchange(reply: Self.classify(response), verification: result)
    }

    /// 2xx with a decodable body is success; the server's verdicts on the license or instance
    /// (``verdictCodes``) are decisions; everything else — 404 (a wrong product id, a proxy path),
    /// 401, 400, 413, 429, 5xx — is reported and retried but changes no state (protocol 6.1:
    /// clients treat 404 as a configuration error, never as a verdict).
    static func classify<T: Decodable & Sendable>(_ response: TransportResponse) -> ServerReply<T> {
        let retryAfter = response.headers["retry-after"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        if (200..<300).contains(response.status) {
            guard let value = try? JSONDecoder().decode(T.self, from: response.body) else {
                return .transient(KeylightError(code: "BAD_RESPONSE", message: "unreadable response from the server"), retryAfter: nil)
            }
            return .success(value)
        }
        let body = try? JSONDecoder().decode(ErrorBody.self, from: response.body)
        let code = body?.code ?? "HTTP_\(response.status)"
        var error = KeylightError.server(code: code, message: body?.error ?? "HTTP \(response.status)")
        if response.status == 409, let limit = body?.activation_limit, let instances = body?.instances {
            // The key is filled in by the caller, which knows it.
            error.seats = SeatsBody(activation_limit: limit, instances: instances).seats(licenseKey: "", thisInstance: nil)
        }
        if response.status == 429 || response.status >= 500 { return .transient(error, retryAfter: retryAfter) }
        if (400..<500).contains(response.status), verdictCodes.contains(code) { return .rejected(error) }
        return .transient(error, retryAfter: nil)
    }

    private struct ErrorBody: Decodable {
        var error: String?
        var code: String?
        /// A full license's 409 (protocol 6.3).
        var activation_limit: Int?
        var instances: [SeatsBody.Entry]?
    }

    /// Codes by which the server decides about a license or instance. Only these change state;
    /// activation's own refusals (`ACTIVATION_LIMIT_REACHED`, `LICENSE_EXPIRED`, an unknown key)
    /// are thrown to the app and change nothing either way.
    static let verdictCodes: Set<String> = ["LICENSE_REVOKED", "LICENSE_SUSPENDED", "INSTANCE_INACTIVE"]

    /// A telemetry value the server accepts: no control characters, at most 64 UTF-8 bytes
    /// (cut on a character boundary); nil when nothing is left.
    static func telemetryValue(_ text: String) -> String? {
        var out = ""
        for character in text where !character.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            guard out.utf8.count + character.utf8.count <= 64 else { break }
            out.append(character)
        }
        return out.isEmpty ? nil : out
    }

    static var platform: String {
        #if os(macOS)
        "macOS"
        #elseif os(iOS)
        "iOS"
        #elseif os(tvOS)
        "tvOS"
        #elseif os(watchOS)
        "watchOS"
        #elseif os(visionOS)
        "visionOS"
        #elseif os(Linux)
        "Linux"
        #else
        "other"
        #endif
    }
}
