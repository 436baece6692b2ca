import Foundation
@testable import Keylight
import KeylightCore
import KeylightSigning
import Testing

/// `activate(appStoreTransaction:)` on any platform (Linux included): the JWS goes to the
/// server's exchange, and the license that comes back, key included, is this device's.
@MainActor
@Suite struct AppStoreExchangeTests {
    @Test func anAppStorePurchaseBecomesThisDevicesLicenseAndKey() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = Fixture.manager(server: server)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        #expect(manager.licenseKey == nil)
        try await manager.activate(appStoreTransaction: "eyJhbGciOiJFUzI1NiJ9.eyJ0IjoxfQ.c2ln")
        #expect(manager.state == .licensed)
        #expect(manager.licenseKey == Fixture.key)
        let request = try #require(server.requests.last)
        #expect(request.path == "/acme/app/appstore/activate")
        let fields = try #require(try JSONSerialization.jsonObject(with: request.body ?? Data()) as? [String: String])
        #expect(fields["signed_transaction"] == "eyJhbGciOiJFUzI1NiJ9.eyJ0IjoxfQ.c2ln" && fields["instance_name"] == "Test Mac" && fields["machine_hash"]?.count == 64)
    }

    @Test func aRefusedExchangeThrowsTheServersCodeAndChangesNothing() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = Fixture.manager(server: server, trialDaysSeed: 14)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        let before = manager.state
        await #expect(throws: KeylightError.self) { try await manager.activate(appStoreTransaction: "not-a-jws") }
        #expect(manager.state == before && manager.licenseKey == nil)
        #expect(manager.lastError?.code == "APPSTORE_SIGNATURE_INVALID")
    }

    @Test func aLeaseForAnotherKeyIsNotAdopted() async throws {
        let server = FakeServer(clock: TestClock())
        server.signWith = try SigningKey.generate(kid: "k1")
        let manager = Fixture.manager(server: server)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        await #expect(throws: KeylightError.self) { try await manager.activate(appStoreTransaction: "a.b.c") }
        #expect(manager.licenseKey == nil && manager.state != .licensed)
    }
}
