import Foundation
import Keylight
import KeylightCore
import KeylightHTTPTransport
import KeylightUI
import Testing

/// KeylightUI's models against a live server: the license window's activation, its summary with
/// what the server says of the license (protocol 6.9), and "Lost your key?" on a server that
/// sends no mail.
@MainActor
@Suite(.serialized, .timeLimit(.minutes(6))) struct LicenseWindowEndToEndTests {
    @Test func pasteActivateSummaryAndLostKey() async throws {
        let server = try LiveServer()
        try await server.start()
        let seed = try await server.seed()
        let trusted = try await server.keyset()
        let manager = EndToEndTests.manager(server, sdkKey: seed.sdkKey, store: EndToEndTests.store(), trusted: trusted)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        let english = UIStrings(language: "en")

        let window = ActivationModel(manager: manager, strings: english)
        window.keyText = "\n " + seed.licenseKey.lowercased().replacingOccurrences(of: "-", with: " - ") + " \n"
        #expect(window.canActivate)
        window.activate()
        for _ in 0..<1_000 where window.isBusy { try await Task.sleep(nanoseconds: 5_000_000) }
        #expect(window.phase == .activated)
        #expect(manager.state == .licensed)

        let summary = LicenseSummaryModel(manager: manager, strings: english)
        await summary.loadDevices()
        let rows = Dictionary(uniqueKeysWithValues: summary.rows().map { ($0.label, $0.value) })
        #expect(rows["Licensed to"] == "e2e@example.com")
        #expect(rows["Kind"] == "Pro")
        #expect(rows["Devices"] == "1 of 2 in use")
        #expect(rows["License key"]?.hasSuffix(String(seed.licenseKey.suffix(4))) == true)

        // The server has no mail set up: the window says what the server says, and sends nothing.
        let lost = LostKeyModel(manager: manager, strings: english)
        lost.email = "e2e@example.com"
        await lost.send()
        guard case .failed(let failure) = lost.phase else { Issue.record("phase \(lost.phase)"); return }
        #expect(failure.error.code == "MAIL_NOT_CONFIGURED")
        #expect(failure.message.contains("Contact the seller"))

        await summary.deactivateThisDevice()
        #expect(manager.licenseKey == nil)
        await server.stop()
    }
}
