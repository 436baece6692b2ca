import Crypto
import Foundation
import Keylight
import KeylightHTTPTransport
import KeylightCore
import KeylightSigning
import Testing

/// A man-in-the-middle between the SDK and the server, as a proxy with a user-installed
/// certificate would be.
final class TamperingProxy: Transport, @unchecked Sendable {
    // @unchecked: `attack` and `lastValidate` are only touched under `lock`.
    enum Attack: CaseIterable {
        case editBody, stripSignature, replay, foreignIntermediate, expiredIntermediate, forgeRejection
    }

    let upstream: HTTPClientTransport
    /// Claims the server's root kid with a key of its own.
    let foreignRoot: SigningKey
    /// A root the app trusts, whose intermediate expired yesterday.
    let expiredRoot: SigningKey
    private let lock = NSLock()
    private var _attack: Attack?
    private var lastValidate: TransportResponse?

    init(upstream: HTTPClientTransport, serverKid: String, expiredRoot: SigningKey) throws {
        self.upstream = upstream
        self.foreignRoot = try SigningKey.generate(kid: serverKid)
        self.expiredRoot = expiredRoot
    }

    var attack: Attack? { get { lock.withLock { _attack } } set { lock.withLock { _attack = newValue } } }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        var response = try await upstream.send(request)
        guard let attack else {
            if request.path.hasSuffix("/validate") { lock.withLock { lastValidate = response } }
            return response
        }
        let nonce = request.headers["X-Keylight-Nonce"].flatMap(ResponseNonce.init(header:))
        switch attack {
        case .editBody:
            var body = Array(response.body)
            if let index = body.lastIndex(where: { (UInt8(ascii: "0")...UInt8(ascii: "8")).contains($0) }) { body[index] += 1 }
            response.body = Data(body)
        case .stripSignature:
            for name in ["x-keylight-signature", "x-keylight-signature-kid", "x-keylight-request-time"] { response.headers[name] = nil }
        case .replay:
            response = lock.withLock { lastValidate } ?? response
        case .forgeRejection:
            response.status = 422
            response.body = Data(#"{"error":"This license has been revoked.","code":"LICENSE_REVOKED","valid":false}"#.utf8)
        case .foreignIntermediate, .expiredIntermediate:
            guard let nonce else { break }
            let intermediate = attack == .foreignIntermediate
                ? IntermediateSigningKey.create(root: foreignRoot, now: Int64(Date().timeIntervalSince1970), validForDays: 3)
                : IntermediateSigningKey.create(root: expiredRoot, expiryDay: UInt32(keylightDay(Int64(Date().timeIntervalSince1970)) - 1))
            let time = String(Int64(Date().timeIntervalSince1970 * 1000))
            var generator = SystemRandomNumberGenerator()
            let signature = intermediate.sign(nonce: nonce.bytes, path: request.path, requestTime: time, body: Array(response.body), using: &generator)
            response.headers["x-keylight-signature"] = signature.header
            response.headers["x-keylight-signature-kid"] = intermediate.rootKid
            response.headers["x-keylight-request-time"] = time
        }
        return response
    }
}

@MainActor
@Suite(.serialized, .timeLimit(.minutes(6))) struct TamperingTests {
    static let expectedReasons: [TamperingProxy.Attack: String] = [
        .editBody: "bad_message_signature", .stripSignature: "missing_signature", .replay: "bad_message_signature",
        .foreignIntermediate: "bad_root_signature", .expiredIntermediate: "intermediate_expired", .forgeRejection: "bad_message_signature",
    ]

    /// An activated app behind the proxy, in `mode`.
    static func setUp(_ mode: VerificationMode) async throws -> (LiveServer, TamperingProxy, LicenseManager) {
        let server = try LiveServer()
        try await server.start()
        let seed = try await server.seed()
        let keyset = try await server.keyset()
        let expiredRoot = try SigningKey.generate(kid: "test-root")
        var trusted = keyset.keys
        trusted[expiredRoot.kid] = expiredRoot.publicKey
        let proxy = try TamperingProxy(upstream: HTTPClientTransport(baseURL: server.url), serverKid: keyset.keys.keys.first!, expiredRoot: expiredRoot)
        let manager = LicenseManager(configuration: Configuration(
            serverURL: server.url, tenantId: "acme", productId: "app", sdkKey: seed.sdkKey, keyPrefix: "ACME", trustedKeys: trusted,
            verificationMode: mode, store: EndToEndTests.store(), transport: proxy
        ))
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        try await manager.activate(key: seed.licenseKey)
        await manager.refreshIfNeeded(force: true)  // gives the proxy a signed validate to replay
        #expect(manager.state == .licensed)
        return (server, proxy, manager)
    }

    @Test func realSignaturesFromTheServerVerify() async throws {
        let (server, _, manager) = try await Self.setUp(.enforced)
        #expect(manager.lastVerification == .verified)
        #expect(manager.lastError == nil)
        await server.stop()
    }

    @Test func enforcedRejectsEveryAttackAndKeepsTheState() async throws {
        let (server, proxy, manager) = try await Self.setUp(.enforced)
        for attack in TamperingProxy.Attack.allCases {
            proxy.attack = attack
            await manager.refreshIfNeeded(force: true)
            #expect(manager.state == .licensed, "\(attack)")
            #expect(manager.lastVerification == .failed(reason: Self.expectedReasons[attack]!), "\(attack)")
            #expect(manager.lastError?.code == "SIGNATURE_VERIFICATION_FAILED", "\(attack)")
        }
        proxy.attack = nil
        await manager.refreshIfNeeded(force: true)
        #expect(manager.lastVerification == .verified)
        await server.stop()
    }

    @Test func informationalReportsEveryAttack() async throws {
        let (server, proxy, manager) = try await Self.setUp(.informational)
        for attack in TamperingProxy.Attack.allCases {
            proxy.attack = attack
            await manager.refreshIfNeeded(force: true)
            #expect(manager.lastVerification == .failed(reason: Self.expectedReasons[attack]!), "\(attack)")
        }
        // Reported, not enforced: the forged refusal (the last attack) was believed.
        #expect(manager.state == .invalid)
        await server.stop()
    }

    @Test func disabledIgnoresSignatures() async throws {
        let (server, proxy, manager) = try await Self.setUp(.disabled)
        for attack in TamperingProxy.Attack.allCases {
            proxy.attack = attack
            await manager.refreshIfNeeded(force: true)
            #expect(manager.lastVerification == .notRequested, "\(attack)")
        }
        #expect(manager.state == .invalid)  // what enforced mode exists to prevent
        await server.stop()
    }
}
