// The hosted Keylight Swift SDK's documented examples (keylight-swift 0.8 README, CHANGELOG and
// docs pages), written as they are there against `import KeylightSDK`. What differs is marked
// "differs:" and is in the README's table: a real key where the README writes "...", the server
// named by KEYLIGHT_SERVER_URL (an app uses KeylightServerURL in its Info.plist), and `try` where
// this SDK throws instead of swallowing errors.
import Foundation
import KeylightSDK
import Testing

/// The hosted README's quick start, as written (with a real public key).
@MainActor
enum Licensing {
    static let manager = try! Keylight.manager(
        sdkKey: "sdk_live_...",
        tenantId: "acme",
        productId: "widget",
        keyPrefix: "ACME",
        trustedPublicKeyBase64: ExampleEnvironment.tenantPublicKey,   // your tenant public key
        trialDurationDays: 14,
        branding: .init(
            appName: "Widget",
            purchaseURL: URL(string: "https://acme.example.com/buy")!,
            supportEmail: "support@acme.example.com",
            tintColor: .orange
        )
    )
}

/// Where the examples' manager keeps its files and which server it asks: a folder of this run,
/// and a loopback port nothing listens on (the examples run offline, as an app on a plane does).
enum ExampleEnvironment {
    static let tenantPublicKey = "wPOiRNiP2hbc0O4UCAuO6FRRLKp4YvGtf8V27xnPzNY="
    static let prepared: Bool = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("keylight-sdk-examples-\(UUID().uuidString)")
        // Apple platforms keep the files in the test runner's Application Support (the simulator's
        // container on iOS).
        // platform: Linux keeps them under XDG_DATA_HOME; on Apple systems this changes nothing.
        setenv("XDG_DATA_HOME", folder.path, 1)
        // Each run starts with nothing kept (on Apple platforms the folder outlives the run).
        try? FileManager.default.removeItem(at: EncryptedFileStore.defaultDirectory(name: "acme-widget"))
        setenv("KEYLIGHT_SERVER_URL", "http://127.0.0.1:9", 1)
        return true
    }()
}

@MainActor
@Suite(.serialized, .timeLimit(.minutes(2))) struct ReadmeExampleTests {
    init() { _ = ExampleEnvironment.prepared }

    @Test func quickStartGatesOnIsEntitled() async throws {
        let license = Licensing.manager
        await license.checkOnLaunch()
        await license.waitUntilIdle()
        // A first launch, offline: the 14-day trial, which entitles everything.
        #expect(license.state == .trial(daysLeft: 14))
        #expect(license.licenseState == .trial(daysLeft: 14))
        #expect(license.isEntitled)
        #expect(license.checkTrialStatus() == .active(daysLeft: 14))
        #expect(license.branding?.appName == "Widget")
        #expect(license.configuration.maxOfflineDays == 15)
    }

    @Test func activateCheckAFeatureDeactivate() async throws {
        let license = Licensing.manager
        await license.checkOnLaunch()
        // differs: `try` — this SDK throws where the hosted one swallows errors. Offline, the
        // activation is refused with a transient error and nothing changes.
        await #expect(throws: KeylightError.self) { try await license.activate(key: "ACME-XXXX-XXXX-XXXX") }
        let canExport = license.hasEntitlement("pro-export")
        #expect(canExport)  // the trial grants every feature
        await #expect(throws: KeylightError.notActivated) { try await license.deactivate() }
        #expect(license.currentEntitlements.isEmpty)
    }

    @Test func refreshOnForegroundAndTheNamesTheDocsUse() async throws {
        let manager = Licensing.manager
        // docs /swift-sdk/validation/: `Task { await manager.refreshIfNeeded() }` when the scene is active.
        await manager.refreshIfNeeded()
        #expect(manager.state == .trial(daysLeft: 14))
        // CHANGELOG 0.4.0: clock check on the provider; 0.8.1: the SDK's version constant.
        #expect(KeylightProvider(configuration: manager.configuration).isClockManipulated() == false)
        #expect(!KeylightProvider.sdkVersion.isEmpty)
        #expect(Keylight.sdkVersion == KeylightProvider.sdkVersion)
        // CHANGELOG 0.7.0: reportKeylessState is fire-and-forget.
        await manager.reportKeylessState(.trial)
        let status: TrialStatus = manager.checkTrialStatus()
        switch status {
        case .notStarted, .expired: Issue.record("the trial runs")
        case .active(let daysLeft): #expect(daysLeft == 14)
        }
    }

    @Test func lifecycleAndStateNotificationsCarryTheDocumentedKeys() async throws {
        // CHANGELOG 0.4.0: events under `lifecycleEvent`, posted as `keylightLifecycleEvent`.
        let observer = NotificationCenter.default.addObserver(forName: .keylightLifecycleEvent, object: nil, queue: nil) { note in
            guard let event = note.userInfo?["lifecycleEvent"] as? LicenseLifecycleEvent else { return }
            switch event {
            case .expired: break
            case .restored: break
            case .renewed:
                _ = note.userInfo?["previousLicenseExpiresAt"] as? Date
                _ = note.userInfo?["newLicenseExpiresAt"] as? Date
            }
        }
        NotificationCenter.default.removeObserver(observer)
        #expect(Notification.Name.keylightLicenseDidChange.rawValue == "KeylightLicenseDidChange")
        #expect(Notification.Name.keylightLifecycleEvent.rawValue == "KeylightLifecycleEvent")
    }

    @Test func theDocumentedStateEnumAndStorageChoices() {
        // docs /concepts/lifecycle/: the six states, matched exhaustively.
        func describe(_ state: LicenseState) -> String {
            switch state {
            case .trial(let days): "trial (\(days) days left)"
            case .licensed: "licensed"
            case .limited: "limited"
            case .freeTier: "free tier"
            case .expired: "expired"
            case .invalid: "invalid"
            }
        }
        #expect(describe(.trial(daysLeft: 3)) == "trial (3 days left)")
        // CHANGELOG 0.6.0 / 0.8.0: the storage choices.
        let choices: [StorageBackend] = [.encryptedFile(), .encryptedFile(keychainMirror: true), .keychain]
        #expect(Set(choices).count == 3)
        #expect(Licensing.manager.configuration.storage == .encryptedFile())
    }

    @Test func aConfigurationWithTrustedPublicKeys() throws {
        // docs: `KeylightConfiguration.trustedPublicKeys: [String: Curve25519.Signing.PublicKey]`.
        let raw = try #require(Data(base64Encoded: ExampleEnvironment.tenantPublicKey))
        let pubKey = try Curve25519.Signing.PublicKey(rawRepresentation: raw)
        var config = KeylightConfiguration(
            serverURL: URL(string: "https://licenses.acme.example")!, tenantId: "testco", productId: "testapp",
            sdkKey: "sdk_live_test", keyPrefix: "TEST", trustedKeys: [:]
        )
        config.trustedPublicKeys = ["k1": pubKey]
        let manager = LicenseManager(provider: KeylightProvider(configuration: config))
        #expect(manager.configuration.trustedKeys["k1"]?.rawRepresentation == raw)
        #expect(Keylight.manager(config).configuration.tenantId == "testco")
    }
}
