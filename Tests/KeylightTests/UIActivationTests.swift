import Foundation
@testable import Keylight
import KeylightCore
import KeylightSigning
@testable import KeylightUI
import Testing

/// KeylightUI's models against the fake server, one test per transition of the license window.
@MainActor @Suite(.timeLimit(.minutes(2))) struct UIActivationTests {
    static let english = UIStrings(language: "en", bundle: nil)

    func launched(_ server: FakeServer, store: any SecureStore = InMemoryStore()) async -> LicenseManager {
        let manager = Fixture.manager(server: server, store: store) {
            $0.branding = BrandingConfig(appName: "Widget", purchaseURL: URL(string: "https://acme.example/buy")!, supportEmail: "help@acme.example")
        }
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        return manager
    }

    /// Activates the fixture's key while the server answers in `mode`; the model and its failure.
    func failing(_ mode: FakeServer.Mode) async throws -> (FakeServer, ActivationModel, LicenseFailure) {
        let server = FakeServer(clock: TestClock())
        let model = ActivationModel(manager: await launched(server), strings: Self.english)
        server.mode = mode
        model.keyText = Fixture.key
        model.activate()
        await settle(model)
        guard case .failed(let failure) = model.phase else { throw KeylightError.server(code: "TEST", message: "phase \(model.phase)") }
        return (server, model, failure)
    }

    /// Waits for the model's activation task to settle (it runs on the main actor).
    func settle(_ model: ActivationModel) async {
        for _ in 0..<500 where model.isBusy { try? await Task.sleep(nanoseconds: 2_000_000) }
    }

    @Test func aPasteFullOfSpacesActivates() async throws {
        let server = FakeServer(clock: TestClock())
        let model = ActivationModel(manager: await launched(server), strings: Self.english)
        model.keyText = "  acme-ab12 -CD34\n-ef56\t–GH78 \n"
        #expect(model.keyText == Fixture.key)
        #expect(model.entry.check == .ready && model.canActivate && model.keyHint == nil)
        model.activate()
        await settle(model)
        #expect(model.phase == .activated)
        #expect(model.manager.state == .licensed)
        #expect(model.statusText == "Widget is activated. Thank you!")
        #expect(model.manager.customerEmail == "buyer@example.com" && model.manager.keyTypeName == "Pro")
        // The developer's purchase page wins; without one, the server's page for this license.
        #expect(model.manager.upgradeURL == URL(string: "https://acme.example/buy")!)
        let plain = Fixture.manager(server: server, store: InMemoryStore())
        await plain.checkOnLaunch()
        try await plain.activate(key: Fixture.key)
        let base = plain.configuration.serverURL.absoluteString
        #expect(plain.upgradeURL?.absoluteString == "\(base.hasSuffix("/") ? String(base.dropLast()) : base)/t/acme/license/\(Fixture.key)/upgrade")
    }

    @Test func theUpgradePageIsBuiltOnlyFromIdsTheServerCouldHaveMade() {
        let server = URL(string: "https://licenses.acme.example/")!
        #expect(LicenseManager.upgradePage(server: server, tenantId: "acme", licenseKey: "ACME-AB12-CD34-EF56-GH78")?.absoluteString
            == "https://licenses.acme.example/t/acme/license/ACME-AB12-CD34-EF56-GH78/upgrade")
        #expect(LicenseManager.upgradePage(server: server, tenantId: "acme", licenseKey: "ACME/../x") == nil)
        #expect(LicenseManager.upgradePage(server: server, tenantId: "ac me", licenseKey: "ACME-AB12") == nil)
        #expect(LicenseManager.upgradePage(server: server, tenantId: "acme", licenseKey: "") == nil)
    }

    @Test func keysAreCheckedAsTheyAreTyped() async throws {
        let server = FakeServer(clock: TestClock())
        let model = ActivationModel(manager: await launched(server), strings: Self.english)
        for (typed, check) in [("", KeyEntry.Check.empty), ("A", .incomplete), ("ACME-AB", .incomplete), ("ACM", .incomplete),
                               ("ZETA-AB12-CD34-EF56-GH78", .wrongProduct), ("ZE", .wrongProduct), ("ACME-AB12-CD34-EF56-GH7!", .invalid),
                               (String(repeating: "A", count: 65), .invalid), (Fixture.key.lowercased(), .ready)] {
            model.keyText = typed
            #expect(model.entry.check == check, "\(typed)")
        }
        model.keyText = "ZETA-AB12-CD34-EF56-GH78"
        #expect(model.keyHint == "That key is for another product: keys for this app start with ACME.")
        #expect(!model.canActivate)
        model.activate()
        #expect(model.phase == .entering)
        #expect(server.count("activate") == 0)  // the wrong product's key never reaches the server
        model.keyText = "ACME-AB"  // 8 characters or more may already be an imported key
        #expect(model.keyHint == "Keep typing: a license key looks like ACME-XXXX-XXXX-XXXX-XXXX.")
    }

    @Test func threeDevicesInUseFreeOneThenActivate() async throws {
        let server = FakeServer(clock: TestClock())
        server.otherDevices = [("i-studio", "Studio Mac"), ("i-laptop", "MacBook Air"), ("i-old", "Old iMac")]
        let model = ActivationModel(manager: await launched(server), strings: Self.english)
        model.keyText = Fixture.key
        model.activate()
        await settle(model)
        guard case .seatsFull(let seats) = model.phase else { Issue.record("phase \(model.phase)"); return }
        #expect(seats.activationLimit == 3 && seats.devices.map(\.name) == ["Studio Mac", "MacBook Air", "Old iMac"])
        #expect(model.statusText == "All 3 devices are in use")
        #expect(model.lastUsed(seats.devices[0]).hasPrefix("Last used "))
        #expect(model.freeLabel(seats.devices[2]) == "Free Old iMac")
        model.free(seats.devices[2])
        #expect(model.statusText == "Freeing Old iMac…")
        await settle(model)
        #expect(model.phase == .activated)
        #expect(server.otherDevices.map(\.id) == ["i-studio", "i-laptop"])
        #expect(model.manager.state == .licensed)
    }

    @Test func aRevokedKeySaysSoAndOffersAnotherKey() async throws {
        let (_, model, failure) = try await failing(.status(422, code: "LICENSE_REVOKED", retryAfter: nil))
        #expect(failure.kind == .revoked && failure.title == "This license can no longer be used")
        #expect(failure.actions == [.editKey, .contactSupport(email: "help@acme.example")])
        // Typing again leaves the failure.
        model.keyText = Fixture.key
        #expect(model.phase == .entering)
    }

    @Test func aKeyTheServerDoesNotKnowIsAWrongKey() async throws {
        let (_, model, failure) = try await failing(.status(404, code: "NOT_FOUND", retryAfter: nil))
        #expect(failure.kind == .wrongKey && failure.actions == [.editKey])
        #expect(failure.title == "That key was not recognized")
        model.perform(.editKey)
        #expect(model.phase == .entering && model.keyText == Fixture.key)
    }

    @Test func anExpiredLicenseOffersRenewal() async throws {
        let (_, _, failure) = try await failing(.status(422, code: "LICENSE_EXPIRED", retryAfter: nil))
        #expect(failure.kind == .expired)
        #expect(failure.actions == [.renew(URL(string: "https://acme.example/buy")!), .editKey])
        #expect(LicenseFailure.title(of: failure.actions[0], Self.english) == "Renew")
    }

    @Test func aNetworkLossOffersRetryAndTheOfflinePath() async throws {
        let (server, model, failure) = try await failing(.offline)
        #expect(failure.kind == .offline && failure.actions == [.retry, .activateOffline])
        #expect(failure.message == "Check your internet connection and try again, or activate offline with a file.")
        server.mode = .normal
        model.perform(.retry)
        await settle(model)
        #expect(model.phase == .activated)
    }

    @Test func aConfigurationMistakeIsTheDevelopersNotTheUsers() async throws {
        let (_, _, failure) = try await failing(.status(401, code: "UNAUTHORIZED", retryAfter: nil))
        #expect(failure.kind == .configuration && failure.message.contains("not with your key"))
    }

    @Test func cancelReturnsToTheKeyAndIgnoresALateAnswer() async throws {
        let server = FakeServer(clock: TestClock())
        let model = ActivationModel(manager: await launched(server), strings: Self.english)
        server.hold()
        model.keyText = Fixture.key
        model.activate()
        #expect(model.isBusy && model.statusText == "Activating…")
        for _ in 0..<200 where server.count("activate") == 0 { try await Task.sleep(nanoseconds: 2_000_000) }
        model.cancel()
        #expect(model.phase == .entering && !model.isBusy)
        server.release()
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(model.phase == .entering)  // the late answer changes nothing in the window
        #expect(model.canActivate)
    }

    /// The request leaves as a file and a QR code; the response made online (here by the fake's
    /// key, as the server would) comes back and licenses the device.
    @Test func offlineExportThenImport() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = await launched(server)
        let model = OfflineActivationModel(manager: manager, strings: Self.english)
        model.prepareRequest()
        let request = try #require(model.requestText)
        #expect(model.requestFile?.name == "activation-request.txt" && model.requestFile?.contents == Data(request.utf8))
        let png = try #require(model.requestQRCode())
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        #expect(model.steps.count == 3)

        let parsed = try OfflineActivationRequest(armored: request)
        let now = server.clock.unixSeconds
        let lease = try Lease.sign(licenseKeyHash: LicenseKey.hash(normalizing: Fixture.key), instanceId: "offline-1", issuedAt: now,
                                   expiresAt: now + 30 * 86_400, status: .active, entitlements: ["pro"], with: server.key)
        let config = ProductConfig(tenantId: "acme", productId: "app", trialDurationDays: 14, freeTierEnabled: false, issuedAt: now, expiresAt: now + 86_400)
            .signed(with: server.key)
        let response = OfflineActivationResponse.make(request: parsed, instanceId: "offline-1", licenseExpiresAt: nil, lease: lease, config: config, key: server.key)
        model.keyText = " acme-ab12-cd34-ef56-gh78 "
        model.importResponse("garbage")
        guard case .failed = model.phase else { Issue.record("garbage was imported"); return }
        model.importResponse(response.armored)
        #expect(model.phase == .imported)
        #expect(manager.state == .licensed && manager.instanceId == "offline-1")
    }

    @Test func lostKeyAnswersAlikeForAKnownAndAnUnknownAddress() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = await launched(server)
        var notices: [String] = []
        for address in ["buyer@example.com", "nobody@example.com"] {
            let model = LostKeyModel(manager: manager, strings: Self.english)
            model.email = "not an address"
            #expect(!model.canSend && model.emailHint == "That does not look like an email address.")
            model.email = " \(address) "
            #expect(model.canSend)
            await model.send()
            guard case .sent(let notice) = model.phase else { Issue.record("phase \(model.phase)"); return }
            notices.append(notice.replacingOccurrences(of: address, with: "<address>"))
        }
        #expect(notices[0] == notices[1])
        #expect(server.lostKeyEmails == ["buyer@example.com", "nobody@example.com"])
        server.mode = .offline
        let offline = LostKeyModel(manager: manager, strings: Self.english)
        offline.email = "buyer@example.com"
        await offline.send()
        guard case .failed(let failure) = offline.phase else { Issue.record("offline sent"); return }
        #expect(failure.kind == .offline)
    }

    @Test func refreshAfterPurchaseSeesTheNewEntitlements() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = await launched(server)
        try await manager.activate(key: Fixture.key)
        var opened: [URL] = []
        let model = PurchaseModel(manager: manager, strings: Self.english, timeout: 10, initialDelay: 0.01)
        #expect(model.buttonTitle == "Upgrade or renew")
        model.buy { opened.append($0) }
        #expect(opened == [URL(string: "https://acme.example/buy")!])
        // The store's webhook reaches the server a moment after the user comes back.
        let upgrade = Task { @MainActor in
            try await Task.sleep(nanoseconds: 30_000_000)
            server.entitlements = ["pro", "team"]
            server.keyTypeName = "Team"
        }
        await model.awaitPurchase()
        try await upgrade.value
        #expect(model.phase == .updated && model.statusText == "Your license is updated.")
        #expect(manager.hasEntitlement("team") && manager.keyTypeName == "Team")
    }

    @Test func refreshAfterPurchaseGivesUpAtItsBound() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = await launched(server)
        try await manager.activate(key: Fixture.key)
        let before = server.count("validate")
        let model = PurchaseModel(manager: manager, strings: Self.english, timeout: 0.2, initialDelay: 0.02)
        let started = ContinuousClock.now
        await model.awaitPurchase()
        #expect(model.phase == .notYet && model.statusText == "The purchase has not arrived yet. It can take a few minutes.")
        #expect(server.count("validate") - before >= 2)  // it asked more than once, backing off
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    @Test func theLicenseSummaryAndDeactivatingThisDevice() async throws {
        let server = FakeServer(clock: TestClock())
        server.otherDevices = [("i-studio", "Studio Mac")]
        let manager = await launched(server)
        try await manager.activate(key: Fixture.key)
        let model = LicenseSummaryModel(manager: manager, strings: Self.english)
        await model.loadDevices()
        let rows = Dictionary(uniqueKeysWithValues: model.rows().map { ($0.label, $0.value) })
        #expect(rows["License"] == "Licensed")
        #expect(rows["License key"] == "ACME-····-····-····-GH78")
        #expect(rows["Licensed to"] == "buyer@example.com" && rows["Kind"] == "Pro")
        #expect(rows["Expires"] == "Never")
        #expect(rows["Devices"] == "2 of 3 in use")
        #expect(model.canDeactivate)
        await model.deactivateThisDevice()
        #expect(manager.licenseKey == nil && manager.customerEmail == nil)
        #expect(!model.rows().contains { $0.label == "License key" })
    }

    @Test func refreshAfterUpgradeNeedsALicenseAndLostKeyAnAddress() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = await launched(server)
        #expect(await manager.refreshAfterUpgrade(timeout: 5, initialDelay: 0.01) == false)
        #expect(server.count("validate") == 0)
        await #expect(throws: KeylightError.self) { try await manager.requestLostKey(email: "nobody") }
        #expect(server.lostKeyEmails.isEmpty)
        #expect(PurchaseModel(manager: manager, strings: Self.english).buttonTitle == "Buy a license")
    }

    @Test func restoringAnAppStorePurchase() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = await launched(server)
        let none = RestorePurchaseModel(manager: manager, strings: Self.english) { throw KeylightError.noAppStorePurchase }
        await none.run()
        guard case .failed(let failure) = none.phase else { Issue.record("phase \(none.phase)"); return }
        #expect(failure.message == "No App Store purchase of this app was found on this device.")
        let found = RestorePurchaseModel(manager: manager, strings: Self.english) { try await manager.activate(appStoreTransaction: "a.b.c") }
        await found.run()
        #expect(found.phase == .restored && manager.state == .licensed)
        // platform: StoreKit is on Apple platforms only; elsewhere the button is not offered.
        #if !canImport(StoreKit)
        #expect(!RestorePurchaseModel(manager: manager, strings: Self.english).isAvailable)
        #endif
    }
}
