import Crypto
import Foundation
import Keylight
import KeylightHTTPTransport
import KeylightCore
import Testing

/// Seats and offline activation through the SDK, against a live server (protocol 6.3, 6.4).
@MainActor
@Suite(.serialized, .timeLimit(.minutes(6))) struct SeatsAndOfflineEndToEndTests {
    struct FixedClock: WallClock {
        var now: Date
    }

    static func manager(
        _ server: LiveServer, sdkKey: String, store: any SecureStore, trusted: Keyset, name: String,
        url: URL? = nil, mode: VerificationMode = .informational, clock: any WallClock = SystemWallClock()
    ) -> LicenseManager {
        LicenseManager(configuration: Configuration(
            serverURL: url ?? server.url, tenantId: "acme", productId: "app", sdkKey: sdkKey, keyPrefix: "ACME",
            trustedKeys: trusted.keys, instanceName: name, verificationMode: mode, clock: clock, store: store,
            transport: HTTPClientTransport(baseURL: url ?? server.url)
        ))
    }

    @Test func aFullLicenseOffersItsDevicesAndFreeingOneLetsTheNewMacIn() async throws {
        let server = try LiveServer()
        try await server.start()
        let seed = try await server.seed()  // 2 seats
        let trusted = try await server.keyset()
        let studio = Self.manager(server, sdkKey: seed.sdkKey, store: InMemoryStore(), trusted: trusted, name: "Studio Mac")
        let laptop = Self.manager(server, sdkKey: seed.sdkKey, store: InMemoryStore(), trusted: trusted, name: "MacBook")
        let newMac = Self.manager(server, sdkKey: seed.sdkKey, store: InMemoryStore(), trusted: trusted, name: "New iMac")
        for manager in [studio, laptop, newMac] { await manager.checkOnLaunch(); await manager.waitUntilIdle() }
        try await studio.activate(key: seed.licenseKey)
        try await laptop.activate(key: seed.licenseKey)

        let mine = try await laptop.devices()
        #expect(mine.activationLimit == 2 && mine.isFull)
        // Activated within the same second, so in either order.
        #expect(Set(mine.devices.map(\.name)) == ["Studio Mac", "MacBook"])
        #expect(mine.devices.filter(\.isThisDevice).map(\.name) == ["MacBook"])

        // "2 of 2 devices in use — free Studio Mac?"
        var offered: Seats?
        do {
            try await newMac.activate(key: seed.licenseKey)
            Issue.record("a third device was activated on a 2-seat license")
        } catch let error as KeylightError {
            #expect(error.code == "ACTIVATION_LIMIT_REACHED")
            offered = error.seats
        }
        let seats = try #require(offered)
        #expect(Set(seats.devices.map(\.name)) == ["Studio Mac", "MacBook"] && seats.isFull)
        let old = try #require(seats.devices.first { $0.name == "Studio Mac" })
        // What an app prints or dumps of a device never holds the key it carries.
        var dumped = ""
        dump(seats, to: &dumped)
        #expect(!"\(old)".contains(seed.licenseKey) && !String(reflecting: old).contains(seed.licenseKey) && !dumped.contains(seed.licenseKey))
        try await newMac.deactivate(device: old)
        #expect(newMac.state != .licensed)  // freeing another device changes nothing here
        try await newMac.activate(key: seed.licenseKey)
        #expect(newMac.state == .licensed)
        #expect(Set(try await newMac.devices().devices.map(\.name)) == ["MacBook", "New iMac"])

        // The freed Mac learns it at its next refresh.
        await studio.refreshIfNeeded(force: true)
        #expect(studio.state == .invalid && studio.lastError?.code == "INSTANCE_INACTIVE")
        await #expect(throws: KeylightError.invalidKeyFormat) { try await newMac.devices(key: "not a key") }
        await server.stop()
    }

    @Test func anAirGappedMacIsLicensedFromAResponseFileAndGivesItsSeatBackWithAProof() async throws {
        let server = try LiveServer()
        try await server.start()
        let seed = try await server.seed()
        let trusted = try await server.keyset()
        let deadURL = URL(string: "http://127.0.0.1:1")!
        let labStore = InMemoryStore()
        // The lab Mac never reaches the server.
        let lab = Self.manager(server, sdkKey: seed.sdkKey, store: labStore, trusted: trusted, name: "Lab Mac", url: deadURL)
        await lab.checkOnLaunch()
        await lab.waitUntilIdle()
        let request = try lab.offlineActivationRequest()
        #expect(request.hasPrefix("-----BEGIN KEYLIGHT ACTIVATION REQUEST-----\n"))
        let parsed = try OfflineActivationRequest(armored: request)
        #expect(parsed.instanceName == "Lab Mac" && parsed.tenantId == "acme")
        // The device key is kept: a second request carries the same one.
        #expect(try OfflineActivationRequest(armored: try lab.offlineActivationRequest()).deviceKey.rawRepresentation == parsed.deviceKey.rawRepresentation)

        // On a Mac online, with the key the customer types.
        let helper = Self.manager(server, sdkKey: seed.sdkKey, store: InMemoryStore(), trusted: trusted, name: "Office Mac")
        let response = try await helper.offlineActivationResponse(forRequest: request, key: seed.licenseKey)

        // Another device cannot use this response, nor can another key.
        let other = Self.manager(server, sdkKey: seed.sdkKey, store: InMemoryStore(), trusted: trusted, name: "Other", url: deadURL)
        _ = try other.offlineActivationRequest()
        #expect(throws: KeylightError.offlineFile("This activation was made for another device.")) { try other.activate(offlineResponse: response, key: seed.licenseKey) }
        let otherKey = try await server.admin("POST", "/tenants/acme/products/app/licenses", ["key_type_id": "pro"])["license_key"] as! String
        #expect(throws: KeylightError.offlineFile("This activation is for another license key.")) { try lab.activate(offlineResponse: response, key: otherKey) }
        #expect(throws: KeylightError.self) { try lab.activate(offlineResponse: "garbage", key: seed.licenseKey) }
        #expect(lab.state != .licensed)

        try lab.activate(offlineResponse: response, key: seed.licenseKey)
        #expect(lab.state == .licensed && Set(lab.entitlements) == ["pro", "export"])
        let leaseEnd = try #require(lab.leaseExpiresAt).timeIntervalSince1970
        #expect(abs(leaseEnd - Date().timeIntervalSince1970 - 365 * 86_400) < 120)

        // The next launch, offline and even under enforced verification, still decides licensed.
        let relaunch = Self.manager(server, sdkKey: seed.sdkKey, store: labStore, trusted: trusted, name: "Lab Mac", url: deadURL, mode: .enforced)
        await relaunch.checkOnLaunch()
        #expect(relaunch.state == .licensed)
        // A year and a day later, with no new response file: expired, as the launch table says.
        let later = Self.manager(server, sdkKey: seed.sdkKey, store: labStore, trusted: trusted, name: "Lab Mac", url: deadURL,
                                 clock: FixedClock(now: Date().addingTimeInterval(366 * 86_400)))
        await later.checkOnLaunch()
        #expect(later.state == .expired)

        // The seat is taken on the server, marked offline.
        let seats = try await helper.devices(key: seed.licenseKey)
        #expect(seats.devices.count == 1 && seats.devices[0].isOffline && seats.devices[0].name == "Lab Mac")

        // Giving the seat back: the lab Mac forgets the license first, then the proof is submitted.
        let proof = try relaunch.offlineDeactivationProof()
        #expect(relaunch.state != .licensed && relaunch.pendingDeactivationProof == proof)
        #expect(throws: KeylightError.notActivated) { try relaunch.offlineDeactivationProof() }
        // The old response is never taken back once its seat was given up.
        #expect(throws: KeylightError.self) { try relaunch.activate(offlineResponse: response, key: seed.licenseKey) }
        #expect(relaunch.state != .licensed)
        try await helper.submitDeactivationProof(proof, key: seed.licenseKey)
        #expect(try await helper.devices(key: seed.licenseKey).devices.isEmpty)
        // Submitted from another machine: this device cannot know, and keeps showing it.
        #expect(relaunch.pendingDeactivationProof == proof)

        // The same store activated online later: its seat is no longer one a proof gives back, and
        // the SDK does not forget the license to make one.
        let online = Self.manager(server, sdkKey: seed.sdkKey, store: labStore, trusted: trusted, name: "Lab Mac")
        await online.checkOnLaunch()
        try await online.activate(key: seed.licenseKey)
        #expect(throws: KeylightError.self) { try online.offlineDeactivationProof() }
        #expect(online.state == .licensed)
        await server.stop()
    }
}
