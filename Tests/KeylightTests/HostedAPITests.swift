import Crypto
import Foundation
@testable import Keylight
import KeylightCore
import Testing

/// The hosted SDK's names and behaviours on top of the manager: the offline cap, lifecycle
/// events, the trial status, the keyless report, the factory and what every request says of the SDK.
@MainActor
@Suite(.timeLimit(.minutes(3))) struct HostedAPITests {
    @Test func aLicenseNotValidatedOnlineForMaxOfflineDaysIsExpiredUntilTheServerIsReached() async throws {
        let server = FakeServer(clock: TestClock())
        let store = InMemoryStore()
        let manager = Fixture.manager(server: server, store: store) { $0.maxOfflineDays = 3 }
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        try await manager.activate(key: Fixture.key)
        #expect(manager.state == .licensed)

        // Offline for two days: the 7-day lease and the 3-day cap both still hold.
        server.mode = .offline
        server.clock.advance(by: 2 * 86_400)
        let second = Fixture.manager(server: server, store: store) { $0.maxOfflineDays = 3 }
        await second.checkOnLaunch()
        await second.waitUntilIdle()
        #expect(second.state == .licensed)

        // Past three days the lease is still current, but the cap decides.
        server.clock.advance(by: 1 * 86_400 + 60)
        let third = Fixture.manager(server: server, store: store) { $0.maxOfflineDays = 3 }
        await third.checkOnLaunch()
        await third.waitUntilIdle()
        #expect(third.state == .expired)
        #expect(third.reason.contains("not validated online"))
        #expect(!third.isEntitled)
        // Without the cap the same store is licensed: it was the cap, not the lease.
        let uncapped = Fixture.manager(server: server, store: store)
        await uncapped.checkOnLaunch()
        await uncapped.waitUntilIdle()
        #expect(uncapped.state == .licensed)

        // Online again: the next validation restores it.
        server.mode = .normal
        await third.refreshIfNeeded(force: true)
        #expect(third.state == .licensed)
    }

    @Test func lifecycleEventsFollowTheDocumentedRules() async throws {
        let server = FakeServer(clock: TestClock())
        let store = InMemoryStore()
        let start = server.clock.unixSeconds
        server.licenseExpiresAt = start + 30 * 86_400
        let manager = Fixture.manager(server: server, store: store, trialDaysSeed: 14)
        let events = Recorder()
        let token = NotificationCenter.default.addObserver(forName: .keylightLifecycleEvent, object: manager, queue: nil) { note in
            events.record(note.userInfo ?? [:])
        }
        defer { NotificationCenter.default.removeObserver(token) }

        await manager.checkOnLaunch()  // the first state of a launch (trial) is not an event
        await manager.waitUntilIdle()
        #expect(events.events.isEmpty)
        try await manager.activate(key: Fixture.key)  // trial → licensed: both grant, no event
        #expect(events.events.isEmpty)

        server.leaseStatus = .expired
        await manager.refreshIfNeeded(force: true)
        #expect(manager.state == .expired)
        #expect(events.names == ["expired"])

        server.leaseStatus = .active
        await manager.refreshIfNeeded(force: true)
        #expect(events.names == ["expired", "restored"])

        // A renewal moves the license's end: renewed, with both dates.
        server.licenseExpiresAt = start + 60 * 86_400
        await manager.refreshIfNeeded(force: true)
        #expect(events.names == ["expired", "restored", "renewed"])
        #expect(events.events[2]["previousLicenseExpiresAt"] as? Date == Date(timeIntervalSince1970: TimeInterval(start + 30 * 86_400)))
        #expect(events.events[2]["newLicenseExpiresAt"] as? Date == Date(timeIntervalSince1970: TimeInterval(start + 60 * 86_400)))
        #expect(manager.licenseExpiresAt == Date(timeIntervalSince1970: TimeInterval(start + 60 * 86_400)))
        // The same end again is no event; a lifetime upgrade is, without a new end.
        await manager.refreshIfNeeded(force: true)
        #expect(events.names.count == 3)
        server.licenseExpiresAt = nil
        await manager.refreshIfNeeded(force: true)
        #expect(events.names == ["expired", "restored", "renewed", "renewed"])
        #expect(events.events[3]["newLicenseExpiresAt"] == nil)
        #expect(events.events[3]["previousLicenseExpiresAt"] as? Date == Date(timeIntervalSince1970: TimeInterval(start + 60 * 86_400)))

        // The user's own deactivation is not announced as an expiry.
        server.clock.advance(by: 20 * 86_400)  // the trial is over, so deactivating denies access
        server.freeTier = false
        await manager.refreshIfNeeded(force: true)  // the signed config now says: no free tier
        #expect(events.names.count == 4)
        try await manager.deactivate()
        #expect(manager.state == .expired)
        #expect(events.names.count == 4)
    }

    @Test func trialStatusIsTheTrialAloneWhateverTheLicense() async throws {
        let server = FakeServer(clock: TestClock())
        server.mode = .offline
        let manager = Fixture.manager(server: server, trialDaysSeed: 14)
        #expect(manager.checkTrialStatus() == .notStarted)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        #expect(manager.checkTrialStatus() == .active(daysLeft: 14))
        server.mode = .normal
        try await manager.activate(key: Fixture.key)
        #expect(manager.licenseState == .licensed)
        #expect(manager.checkTrialStatus() == .active(daysLeft: 14))
        server.clock.advance(by: 15 * 86_400)
        #expect(manager.checkTrialStatus() == .expired)
        #expect(manager.currentEntitlements == ["pro"])
    }

    @Test func keylessStateIsReportedOnlyWithoutALicense() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = Fixture.manager(server: server)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        let before = server.count("keyless")
        await manager.reportKeylessState(.freeTier)
        #expect(server.count("keyless") == before + 1)
        let body = try #require(server.requests.last { $0.path.hasSuffix("/keyless") }?.body)
        let fields = try #require(try JSONSerialization.jsonObject(with: body) as? [String: String])
        #expect(fields["state"] == "free_tier")
        #expect(fields["instance_id"]?.isEmpty == false)

        try await manager.activate(key: Fixture.key)
        await manager.reportKeylessState(.expired)
        #expect(server.count("keyless") == before + 1)
    }

    @Test func everyRequestSaysWhichSDKSentIt() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = Fixture.manager(server: server)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        try await manager.activate(key: Fixture.key)
        await manager.refreshIfNeeded(force: true)
        let posts = server.requests.filter { $0.method == "POST" }
        #expect(posts.count >= 3)  // keyless, activate, validate
        for request in posts {
            let fields = try #require(try JSONSerialization.jsonObject(with: request.body ?? Data()) as? [String: String])
            #expect(fields["sdk_version"] == Keylight.sdkVersion)
            #expect(fields["sdk"] == "swift")
            #expect(fields["platform"] == KeylightClient.platform)
        }
        #expect(Keylight.sdkVersion.split(separator: ".").count == 3)
        #expect(KeylightProvider.sdkVersion == Keylight.sdkVersion)
    }

    @Test func theFreeTierSeedAppliesUntilASignedConfigSays() async throws {
        let server = FakeServer(clock: TestClock())
        server.mode = .offline
        let manager = Fixture.manager(server: server, trialDaysSeed: 0) { $0.freeTierSeed = true }
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        #expect(manager.state == .freeTier)
        // The server's signed config (free tier off, 14-day trial) wins once verified.
        server.mode = .normal
        server.freeTier = false
        server.trialDays = 0
        await manager.refreshIfNeeded(force: true)
        #expect(manager.state == .expired)
    }

    @Test func theFactoryChecksWhatItIsGiven() throws {
        let key = Curve25519.Signing.PrivateKey().publicKey
        let base64 = key.rawRepresentation.base64EncodedString()
        let server = URL(string: "https://licenses.example.com")!
        let manager = try Keylight.manager(
            sdkKey: "kl_sdk_x", tenantId: "acme", productId: "widget", keyPrefix: "ACME", trustedPublicKeyBase64: base64,
            trialDurationDays: 14, kid: "k7", freeTierEnabled: true, storage: .keychain, serverURL: server
        )
        #expect(manager.configuration.trustedPublicKeys["k7"]?.rawRepresentation == key.rawRepresentation)
        #expect(manager.configuration.maxOfflineDays == 15)
        #expect(manager.configuration.trialDaysSeed == 14)
        #expect(manager.configuration.freeTierSeed)
        #expect(manager.configuration.storage == .keychain)
        #if canImport(Security)
        #expect(manager.configuration.store is KeychainStore)
        #else
        // No Keychain here: the Keychain choice keeps the license in sealed files.
        #expect(manager.configuration.store is EncryptedFileStore)
        #endif
        #expect(manager.configuration.serverURL == server)

        for (base64, tenant, url) in [("not a key", "acme", server), (Data(count: 31).base64EncodedString(), "acme", server), (base64, "Acme", server), (base64, "-acme", server)] {
            let error = #expect(throws: KeylightError.self) {
                try Keylight.manager(sdkKey: "k", tenantId: tenant, productId: "widget", keyPrefix: "ACME", trustedPublicKeyBase64: base64, trialDurationDays: 0, serverURL: url)
            }
            #expect(error?.code == "CONFIGURATION")
        }
        // No server named anywhere (no Info.plist here, and the environment names none).
        if Configuration.bundleServerURL() == nil {
            let error = #expect(throws: KeylightError.self) {
                try Keylight.manager(sdkKey: "k", tenantId: "acme", productId: "widget", keyPrefix: "ACME", trustedPublicKeyBase64: base64, trialDurationDays: 0)
            }
            #expect(error?.message.contains("KeylightServerURL") == true)
        }
        #expect(Configuration.bundleServerURL(environment: ["KEYLIGHT_SERVER_URL": "https://l.example.com"]) == URL(string: "https://l.example.com"))
        #expect(Configuration.bundleServerURL(environment: ["KEYLIGHT_SERVER_URL": "ftp://l.example.com"]) == nil)
        #expect(Configuration.bundleServerURL(environment: [:]) == nil)
    }

    @Test func aMirroredStoreRecoversFromItsMirror() throws {
        let primary = InMemoryStore(), mirror = InMemoryStore()
        let store = MirroredStore(primary: primary, mirror: mirror)
        try store.set(Data("state".utf8), for: "state")
        #expect(try primary.data(for: "state") == Data("state".utf8))
        #expect(try mirror.data(for: "state") == Data("state".utf8))
        try primary.set(nil, for: "state")  // the file was deleted
        #expect(try store.data(for: "state") == Data("state".utf8))
        let broken = MirroredStore(primary: KeychainStore(service: "s", keychain: LockedKeychain()), mirror: mirror)
        #expect(try broken.data(for: "state") == Data("state".utf8))
        let neither = MirroredStore(primary: KeychainStore(service: "s", keychain: LockedKeychain()), mirror: InMemoryStore())
        #expect(throws: KeylightError.storageLocked) { try neither.data(for: "state") }
    }
}

/// A Keychain that is always locked.
private struct LockedKeychain: KeychainServices {
    func add(_ attributes: [String: any Sendable]) -> Int32 { KeychainStatus.interactionNotAllowed }
    func copyMatching(_ query: [String: any Sendable]) -> (status: Int32, result: Any?) { (KeychainStatus.interactionNotAllowed, nil) }
    func update(_ query: [String: any Sendable], _ attributes: [String: any Sendable]) -> Int32 { KeychainStatus.interactionNotAllowed }
    func delete(_ query: [String: any Sendable]) -> Int32 { KeychainStatus.interactionNotAllowed }
}

/// Notification `userInfo`s as they were posted.
final class Recorder: @unchecked Sendable {
    // @unchecked: `values` is only touched under `lock`.
    private let lock = NSLock()
    private var values: [[AnyHashable: Any]] = []
    func record(_ info: [AnyHashable: Any]) { lock.withLock { values.append(info) } }
    var events: [[AnyHashable: Any]] { lock.withLock { values } }
    var names: [String] { events.compactMap { ($0["lifecycleEvent"] as? LicenseLifecycleEvent)?.rawValue } }
}
