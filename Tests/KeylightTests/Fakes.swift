import Crypto
import Foundation
@testable import Keylight
import KeylightCore
import KeylightSigning

/// A wall clock tests move by hand.
final class TestClock: WallClock, @unchecked Sendable {
    // @unchecked: `seconds` is only touched under `lock`.
    private var seconds: Int64
    private let lock = NSLock()
    init(_ start: Int64 = 1_781_076_246) { seconds = start }
    var now: Date { lock.withLock { Date(timeIntervalSince1970: TimeInterval(seconds)) } }
    func advance(by delta: Int64) { lock.withLock { seconds += delta } }
    func set(_ value: Int64) { lock.withLock { seconds = value } }
}

/// A server in a box: answers like a Keylight server would, signs real leases, and can be
/// told to fail, refuse, or hold requests.
final class FakeServer: Transport, @unchecked Sendable {
    // @unchecked: all mutable state is behind `lock`.
    enum Mode { case normal, offline, status(Int, code: String, retryAfter: Int?) }

    let key: SigningKey
    let clock: TestClock
    private let lock = NSLock()
    private var _mode = Mode.normal
    private var _requests: [TransportRequest] = []
    private var _leaseStatus = Lease.Status.active
    private var _entitlements = ["pro"]
    private var _trialDays = 14
    private var _freeTier = true
    private var _licenseExpiresAt: Int64?
    /// Requests parked by ``hold()``, all resumed by ``release()``.
    private var _gates: [CheckedContinuation<Void, Never>] = []
    private var _holding = false
    private var _serverOffset: Int64 = 0
    private var _configOverride: SignedProductConfig?
    var signWith: SigningKey?
    /// Seats float with this heartbeat (seconds), as a floating license's answers say.
    var heartbeat: Int?
    /// Other devices holding the license's seats; with as many as `seatLimit`, activate is a 409
    /// listing them until one is freed (deactivate with its id).
    private var _otherDevices: [(id: String, name: String)] = []
    var seatLimit = 3
    /// What the server says beside the lease.
    var customerEmail: String? = "buyer@example.com"
    var keyTypeName: String? = "Pro"
    /// Addresses "lost key" was asked for.
    private var _lostKeyEmails: [String] = []

    var otherDevices: [(id: String, name: String)] { get { lock.withLock { _otherDevices } } set { lock.withLock { _otherDevices = newValue } } }
    var lostKeyEmails: [String] { lock.withLock { _lostKeyEmails } }
    var entitlements: [String] { get { lock.withLock { _entitlements } } set { lock.withLock { _entitlements = newValue } } }
    /// Answer requests that carry a nonce with signed responses (protocol section 3).
    var signsResponses = false

    init(clock: TestClock, key: SigningKey = try! SigningKey.generate(kid: "k1")) {
        self.clock = clock
        self.key = key
    }

    var mode: Mode { get { lock.withLock { _mode } } set { lock.withLock { _mode = newValue } } }
    var requests: [TransportRequest] { lock.withLock { _requests } }
    var leaseStatus: Lease.Status { get { lock.withLock { _leaseStatus } } set { lock.withLock { _leaseStatus = newValue } } }
    var trialDays: Int { get { lock.withLock { _trialDays } } set { lock.withLock { _trialDays = newValue } } }
    var freeTier: Bool { get { lock.withLock { _freeTier } } set { lock.withLock { _freeTier = newValue } } }
    var licenseExpiresAt: Int64? { get { lock.withLock { _licenseExpiresAt } } set { lock.withLock { _licenseExpiresAt = newValue } } }

    /// The server's clock minus the device's (the device's clock is `clock`).
    var serverOffset: Int64 { get { lock.withLock { _serverOffset } } set { lock.withLock { _serverOffset = newValue } } }
    /// A config to answer instead of a fresh one (a replay).
    var configOverride: SignedProductConfig? { get { lock.withLock { _configOverride } } set { lock.withLock { _configOverride = newValue } } }

    func count(_ action: String) -> Int { requests.filter { $0.path.hasSuffix("/" + action) }.count }

    /// Requests wait until ``release()``.
    func hold() { lock.withLock { _holding = true } }
    func release() {
        let gates = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            _holding = false
            defer { _gates = [] }
            return _gates
        }
        for gate in gates { gate.resume() }
    }

    var keyset: [String: Curve25519.Signing.PublicKey] { [key.kid: key.publicKey] }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        lock.withLock { _requests.append(request) }
        // Whether to wait is decided under the same lock that parks the request, so a release()
        // in between cannot be missed (the request would wait forever).
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let park = lock.withLock { () -> Bool in
                if _holding { _gates.append(continuation) }
                return _holding
            }
            if !park { continuation.resume() }
        }
        switch mode {
        case .offline:
            throw URLError(.notConnectedToInternet)
        case .status(let status, let code, let retryAfter):
            var headers: [String: String] = [:]
            if let retryAfter { headers["Retry-After"] = String(retryAfter) }
            return TransportResponse(status: status, headers: headers, body: Data(#"{"error":"refused","code":"\#(code)"}"#.utf8))
        case .normal:
            var response = try answer(request)
            if signsResponses, let header = request.headers["X-Keylight-Nonce"], let nonce = ResponseNonce(header: header) {
                let intermediate = IntermediateSigningKey.create(root: key, now: clock.unixSeconds, validForDays: 2)
                let time = String(clock.unixMilliseconds)
                var generator = SystemRandomNumberGenerator()
                let signature = intermediate.sign(nonce: nonce.bytes, path: request.path, requestTime: time, body: Array(response.body), using: &generator)
                response.headers["x-keylight-signature"] = signature.header
                response.headers["x-keylight-signature-kid"] = key.kid
                response.headers["x-keylight-request-time"] = time
            }
            return response
        }
    }

    private func answer(_ request: TransportRequest) throws -> TransportResponse {
        let fields = (request.body.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: String] }) ?? [:]
        let now = clock.unixSeconds + serverOffset
        let action = request.path.split(separator: "/").last.map(String.init) ?? ""
        func lease(key: String, instance: String) throws -> [String: Any] {
            let status = leaseStatus
            let lease = try Lease.sign(
                licenseKeyHash: LicenseKey.hash(normalizing: key), instanceId: instance, issuedAt: now, expiresAt: now + 7 * 86_400,
                status: status, entitlements: status == .active ? lock.withLock { _entitlements } : [], with: signWith ?? self.key
            )
            return try JSONSerialization.jsonObject(with: lease.json()) as! [String: Any]
        }
        let config = configOverride ?? ProductConfig(tenantId: "acme", productId: "app", trialDurationDays: trialDays, freeTierEnabled: freeTier, issuedAt: now, expiresAt: now + 86_400)
            .signed(with: signWith ?? key)
        let configObject = try JSONSerialization.jsonObject(with: JSONEncoder().encode(config)) as! [String: Any]
        var body: [String: Any]
        switch action {
        case "activate" where request.path.hasSuffix("/appstore/activate"):
            // A StoreKit transaction's license: the key comes back with the activation.
            guard fields["signed_transaction"]?.split(separator: ".").count == 3 else {
                return TransportResponse(status: 422, body: Data(#"{"activated":false,"error":"bad","code":"APPSTORE_SIGNATURE_INVALID"}"#.utf8))
            }
            body = ["activated": true, "instance_id": "instance-1", "license_expires_at": NSNull(), "license_key": Fixture.key,
                    "lease": try lease(key: Fixture.key, instance: "instance-1")]
        case "activate" where otherDevices.count >= seatLimit:
            let instances: [[String: Any]] = otherDevices.map {
                ["instance_id": $0.id, "instance_name": $0.name, "activated_at": now - 86_400, "last_seen_at": now - 3_600, "offline": false]
            }
            let full: [String: Any] = ["activated": false, "error": "All seats are in use.", "code": "ACTIVATION_LIMIT_REACHED",
                                       "activation_limit": seatLimit, "instances": instances]
            return TransportResponse(status: 409, body: try JSONSerialization.data(withJSONObject: full))
        case "activate":
            body = ["activated": true, "instance_id": "instance-1", "license_expires_at": licenseExpiresAt ?? NSNull(), "lease": try lease(key: fields["license_key"] ?? "", instance: "instance-1")]
            body["customer_email"] = customerEmail ?? NSNull()
            body["key_type_name"] = keyTypeName ?? NSNull()
            if let heartbeat { body["heartbeat_seconds"] = heartbeat }
        case "validate":
            body = ["valid": leaseStatus != .expired, "license_expires_at": licenseExpiresAt ?? NSNull(), "lease": try lease(key: fields["license_key"] ?? "", instance: fields["instance_id"] ?? ""), "config": configObject]
            body["customer_email"] = customerEmail ?? NSNull()
            body["key_type_name"] = keyTypeName ?? NSNull()
        case "deactivate":
            let freed = fields["instance_id"]
            lock.withLock { _otherDevices.removeAll { $0.id == freed } }
            body = ["deactivated": true]
        case "lost-key":
            lock.withLock { _lostKeyEmails.append(fields["email"] ?? "") }
            return TransportResponse(status: 202, body: Data(#"{"received":true}"#.utf8))
        case "instances":
            let instances: [[String: Any]] = [["instance_id": "instance-1", "instance_name": "Test Mac", "activated_at": now - 60, "last_seen_at": now]]
                + otherDevices.map { ["instance_id": $0.id, "instance_name": $0.name, "activated_at": now - 86_400, "last_seen_at": now - 3_600] }
            body = ["activation_limit": seatLimit, "instances": instances]
        case "keyless":
            body = ["ok": true, "config": configObject]
        case "config":
            body = configObject
        default:
            return TransportResponse(status: 404, body: Data(#"{"error":"no","code":"NOT_FOUND"}"#.utf8))
        }
        return TransportResponse(status: 200, body: try JSONSerialization.data(withJSONObject: body))
    }
}

enum Fixture {
    static let key = "ACME-AB12-CD34-EF56-GH78"

    /// A manager that launched and activated ``key`` on `server`, keeping its state in `store`.
    @MainActor
    static func activated(server: FakeServer, store: any SecureStore) async throws -> LicenseManager {
        let manager = Fixture.manager(server: server, store: store)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        try await manager.activate(key: key)
        return manager
    }

    @MainActor
    static func manager(
        server: FakeServer, store: any SecureStore = InMemoryStore(), trialDaysSeed: Int = 0, trusted: [String: Curve25519.Signing.PublicKey]? = nil,
        mode: VerificationMode = .informational, configure: (inout Configuration) -> Void = { _ in }
    ) -> LicenseManager {
        var configuration = Configuration(
            serverURL: URL(string: "https://licenses.invalid")!, tenantId: "acme", productId: "app", sdkKey: "kl_sdk_test",
            keyPrefix: "ACME", trustedKeys: trusted ?? server.keyset, trialDaysSeed: trialDaysSeed,
            instanceName: "Test Mac", verificationMode: mode, clock: server.clock, store: store, transport: server
        )
        configure(&configuration)
        return LicenseManager(configuration: configuration)
    }
}
