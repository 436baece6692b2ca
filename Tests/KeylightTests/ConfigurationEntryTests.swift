import Crypto
import Foundation
@testable import Keylight
import KeylightCore
import KeylightSigning
import Testing

/// The one way in: Info.plist entries (or the same values in code), key ids derived as the
/// server derives them, and every mistake a thrown error that names the entry.
@MainActor @Suite(.timeLimit(.minutes(2))) struct ConfigurationEntryTests {
    static let current = try! SigningKey.generate()
    static let next = try! SigningKey.generate()

    static func plist(_ changes: [String: Any?] = [:]) -> [String: Any] {
        var info: [String: Any] = [
            "KeylightServerURL": "https://licenses.acme.example",
            "KeylightTenant": "acme", "KeylightProduct": "app", "KeylightSDKKey": "kl_sdk_0123456789",
            "KeylightPublicKeys": [current.publicKeyBase64, next.publicKeyBase64],
            "CFBundleShortVersionString": "3.1",
        ]
        for (key, value) in changes { info[key] = value }
        return info
    }

    @Test func theInfoPlistWayTrustsEachKeyUnderTheServersKid() throws {
        let configuration = try Configuration(infoDictionary: Self.plist(["KeylightKeyPrefix": "ACME", "KeylightTrialDays": 14, "KeylightFreeTier": true]))
        #expect(configuration.serverURL.absoluteString == "https://licenses.acme.example")
        #expect(configuration.tenantId == "acme" && configuration.productId == "app")
        #expect(configuration.sdkKey == "kl_sdk_0123456789")
        #expect(Set(configuration.trustedKeys.keys) == [Self.current.kid, Self.next.kid])
        #expect(configuration.trustedKeys[Self.current.kid]?.rawRepresentation == Self.current.publicKey.rawRepresentation)
        #expect(Self.current.kid.hasPrefix("k") && Self.current.kid.count == 11)
        #expect(configuration.keyPrefix == "ACME")
        #expect(configuration.trialDaysSeed == 14 && configuration.freeTierSeed)
        #expect(configuration.appVersion == "3.1")
        #expect(configuration.maxOfflineDays == Configuration.Defaults.maxOfflineDays)
        #expect(configuration.sendsTelemetry && configuration.sendsKeylessBeacon)
        // The same values in code make the same configuration.
        let inCode = try Configuration(
            serverURL: URL(string: "https://licenses.acme.example")!, tenant: "acme", product: "app", sdkKey: "kl_sdk_0123456789",
            publicKeys: [Self.current.publicKeyBase64, Self.next.publicKeyBase64], keyPrefix: "ACME", trialDays: 14, freeTier: true
        )
        #expect(inCode.trustedKeys.mapValues(\.rawRepresentation) == configuration.trustedKeys.mapValues(\.rawRepresentation))
        #expect(inCode.maxOfflineDays == configuration.maxOfflineDays && inCode.storage == configuration.storage)
    }

    @Test func anAppGroupKeepsTheLicenseInSharedFiles() throws {
        let shared = try Configuration(infoDictionary: Self.plist(["KeylightAppGroup": "group.com.acme.shared"]))
        #expect(shared.appGroup == "group.com.acme.shared")
        #expect(shared.storage == .encryptedFile())
        // platform: every one (an app group always uses the file store, Keychain or not).
        #expect(shared.store is EncryptedFileStore)
        let plain = try Configuration(infoDictionary: Self.plist())
        #expect(plain.appGroup == nil && plain.storage == Configuration.Defaults.storage)
    }

    @Test(arguments: [
        ("KeylightServerURL", nil, "KeylightServerURL is missing"),
        ("KeylightServerURL", "http://licenses.acme.example", "KeylightServerURL must use https"),
        ("KeylightServerURL", "licenses.acme.example", "KeylightServerURL must be an https URL"),
        ("KeylightTenant", nil, "KeylightTenant is missing"),
        ("KeylightTenant", "Acme Inc", "KeylightTenant \"Acme Inc\" is not a tenant or product id"),
        ("KeylightProduct", "", "KeylightProduct in the app's Info.plist must be a non-empty string"),
        ("KeylightSDKKey", nil, "KeylightSDKKey is missing"),
        ("KeylightPublicKeys", nil, "KeylightPublicKeys is missing"),
        ("KeylightKeyPrefix", "acme", "KeylightKeyPrefix \"acme\" must be 2-8 of A-Z 0-9"),
        ("KeylightTrialDays", "two weeks", "KeylightTrialDays must be a whole number"),
        ("KeylightFreeTier", "maybe", "KeylightFreeTier in the app's Info.plist must be a Boolean"),
    ] as [(String, String?, String)])
    func aMistakeNamesItsEntry(key: String, value: String?, message: String) throws {
        var info = Self.plist()
        info[key] = value
        let error = #expect(throws: KeylightError.self) { try Configuration(infoDictionary: info) }
        #expect(error?.kind == .configuration)
        #expect(error?.message.hasPrefix(message) == true, "\(error?.message ?? "")")
        #expect(error?.recoverySuggestion?.contains("Info.plist") == true)
    }

    @Test func aBadPublicKeyIsNamedByItsPosition() throws {
        for keys in [[Self.current.publicKeyBase64, "not a key"], [Self.current.publicKeyBase64, Data(count: 31).base64EncodedString()]] as [[Any]] {
            let error = #expect(throws: KeylightError.self) { try Configuration(infoDictionary: Self.plist(["KeylightPublicKeys": keys])) }
            #expect(error?.message == "KeylightPublicKeys[1] is not a base64 Ed25519 public key (32 bytes)")
        }
        let empty = #expect(throws: KeylightError.self) { try Configuration(infoDictionary: Self.plist(["KeylightPublicKeys": [String]()])) }
        #expect(empty?.message.hasPrefix("KeylightPublicKeys is empty") == true)
        let code = #expect(throws: KeylightError.self) {
            try Configuration(serverURL: URL(string: "https://l.example")!, tenant: "acme", product: "app", sdkKey: "k", publicKeys: ["x"])
        }
        #expect(code?.message == "publicKeys[0] is not a base64 Ed25519 public key (32 bytes)")
        // Loopback may use http (a development server); URL-safe base64 without padding is read too.
        let local = try Configuration(infoDictionary: Self.plist([
            "KeylightServerURL": "http://127.0.0.1:8080",
            "KeylightPublicKeys": [Self.current.publicKeyBase64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")],
        ]))
        #expect(local.trustedKeys[Self.current.kid] != nil)
    }

    /// The documented quick start with this server's keys: the hosted factory without `kid`
    /// trusts the key under the id the server signs with, so activation is licensed (it was
    /// refused as UNTRUSTED_LEASE under "k1").
    @Test func theHostedFactoryDerivesTheKid() async throws {
        let server = FakeServer(clock: TestClock(), key: Self.current)
        let manager = try Keylight.manager(
            sdkKey: "kl_sdk_test", tenantId: "acme", productId: "app", keyPrefix: "ACME",
            trustedPublicKeyBase64: Self.current.publicKeyBase64, trialDurationDays: 14, serverURL: URL(string: "https://licenses.invalid")!
        )
        #expect(manager.configuration.trustedKeys.keys.sorted() == [Self.current.kid])
        var configuration = manager.configuration
        configuration.transport = server
        configuration.clock = server.clock
        configuration.store = InMemoryStore()
        let live = LicenseManager(configuration: configuration)
        await live.checkOnLaunch()
        try await live.activate(key: Fixture.key)
        #expect(live.state == .licensed)
        // An explicit kid is still honoured, and checked.
        let named = try Keylight.manager(sdkKey: "k", tenantId: "acme", productId: "app", keyPrefix: "ACME", trustedPublicKeyBase64: Self.current.publicKeyBase64,
                                         trialDurationDays: 1, kid: "legacy-1", serverURL: URL(string: "https://l.example")!)
        #expect(named.configuration.trustedKeys.keys.sorted() == ["legacy-1"])
        #expect(throws: KeylightError.self) {
            try Keylight.manager(sdkKey: "k", tenantId: "acme", productId: "app", keyPrefix: "ACME", trustedPublicKeyBase64: Self.current.publicKeyBase64,
                                 trialDurationDays: 1, kid: "a|b", serverURL: URL(string: "https://l.example")!)
        }
    }

    @Test func withoutAKeyPrefixAnyKeyGoesToTheServer() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = Fixture.manager(server: server) { $0.keyPrefix = "" }
        await manager.checkOnLaunch()
        try await manager.activate(key: Fixture.key)
        #expect(manager.state == .licensed)
    }

    @Test func telemetryAndTheBeaconCanBeTurnedOff() async throws {
        let server = FakeServer(clock: TestClock())
        let quiet = Fixture.manager(server: server) {
            $0.sendsTelemetry = false
            $0.sendsKeylessBeacon = false
        }
        await quiet.checkOnLaunch()
        await quiet.waitUntilIdle()
        #expect(server.count("keyless") == 0)
        #expect(server.count("config") == 1)  // the signed config is still fetched
        try await quiet.activate(key: Fixture.key)
        let body = try #require(server.requests.last { $0.path.hasSuffix("/activate") }?.body)
        let fields = try #require(try JSONSerialization.jsonObject(with: body) as? [String: String])
        #expect(fields["sdk_version"] == nil && fields["platform"] == nil && fields["sdk"] == nil && fields["app_version"] == nil)
        #expect(fields["license_key"] == Fixture.key)

        let chatty = FakeServer(clock: TestClock())
        let manager = Fixture.manager(server: chatty)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        #expect(chatty.count("keyless") == 1)
        try await manager.activate(key: Fixture.key)
        let sent = try #require(chatty.requests.last { $0.path.hasSuffix("/activate") }?.body)
        #expect((try JSONSerialization.jsonObject(with: sent) as? [String: String])?["sdk"] == "swift")
    }

    @Test func deviceNamesComeFromLocalSettingsOnly() {
        #expect(DeviceName.name(computerName: "Ann's MacBook Pro", modelIdentifier: nil, hostName: "host") == "Ann's MacBook Pro")
        #expect(DeviceName.name(computerName: nil, modelIdentifier: "iPhone16,1", hostName: "localhost") == "iPhone (iPhone16,1)")
        #expect(DeviceName.name(computerName: nil, modelIdentifier: "iPad14,3", hostName: nil) == "iPad (iPad14,3)")
        #expect(DeviceName.name(computerName: nil, modelIdentifier: "RealityDevice14,1", hostName: nil) == "Apple Vision Pro (RealityDevice14,1)")
        #expect(DeviceName.name(computerName: nil, modelIdentifier: "Watch7,1", hostName: nil) == "Apple Watch (Watch7,1)")
        // Mac Catalyst reads hw.model: the Mac's model, not its CPU.
        #expect(DeviceName.name(computerName: nil, modelIdentifier: "MacBookPro18,3", hostName: nil) == "Mac (MacBookPro18,3)")
        #expect(DeviceName.name(computerName: nil, modelIdentifier: "iMac21,1", hostName: nil) == "iMac (iMac21,1)")
        #expect(DeviceName.name(computerName: " \u{7}\n", modelIdentifier: nil, hostName: "build-01") == "build-01")
        #expect(DeviceName.name(computerName: nil, modelIdentifier: nil, hostName: nil) == "This device")
        #expect(DeviceName.name(computerName: String(repeating: "x", count: 300), modelIdentifier: nil, hostName: nil).count == 64)
        // platform: Linux has no computer name or model; the host name comes from gethostname.
        #if os(Linux)
        #expect(DeviceName.current == DeviceName.hostName)
        #expect(!(DeviceName.hostName ?? "").isEmpty)
        #endif
    }
}

extension SigningKey {
    var publicKeyBase64: String { publicKey.rawRepresentation.base64EncodedString() }
}
