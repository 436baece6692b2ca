import Crypto
import Foundation
import Keylight
import KeylightCore
import Testing

/// The SDK against a live server on a loopback port: the whole path an app takes.
@MainActor
@Suite(.serialized) struct EndToEndTests {
    static func manager(_ server: LiveServer, sdkKey: String, store: any SecureStore, trusted: Keyset) -> LicenseManager {
        LicenseManager(configuration: Configuration(
            serverURL: server.url, tenantId: "acme", productId: "app", sdkKey: sdkKey, keyPrefix: "ACME",
            trustedKeys: trusted.keys, trialDaysSeed: 3, instanceName: "E2E Mac", store: store
        ))
    }

    static func store() -> EncryptedFileStore {
        EncryptedFileStore(directory: FileManager.default.temporaryDirectory.appendingPathComponent("keylight-e2e-store-\(UUID().uuidString)"))
    }

    @Test func activateLaunchOfflineRevokeAndRefresh() async throws {
        let server = try LiveServer()
        try await server.start()
        let seed = try await server.seed()
        let trusted = try await server.keyset()
        let store = Self.store()

        let manager = Self.manager(server, sdkKey: seed.sdkKey, store: store, trusted: trusted)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        #expect(manager.state == .trial(daysLeft: 14))  // the verified config replaced the 3-day seed
        try await manager.activate(key: seed.licenseKey)
        #expect(manager.state == .licensed)
        #expect(Set(manager.entitlements) == ["export", "pro"])
        let detail = try await server.admin("GET", "/tenants/acme/products/app/licenses/\(seed.licenseId)")
        let instances = try #require(detail["instances"] as? [[String: Any]])
        #expect(instances.count == 1 && instances[0]["instance_name"] as? String == "E2E Mac")

        // The server goes away: the next launch still decides from the verified cache.
        await server.stop()
        let offline = Self.manager(server, sdkKey: seed.sdkKey, store: store, trusted: trusted)
        await offline.checkOnLaunch()
        #expect(offline.state == .licensed)
        await offline.refreshIfNeeded(force: true)
        #expect(offline.state == .licensed)
        #expect(offline.lastError?.code == "TRANSIENT")

        // Back online; the developer revokes the license; the next refresh says so.
        try await server.start()
        _ = try await server.admin("POST", "/tenants/acme/products/app/licenses/\(seed.licenseId)/revoke")
        let online = Self.manager(server, sdkKey: seed.sdkKey, store: store, trusted: trusted)
        await online.checkOnLaunch()
        await online.refreshIfNeeded(force: true)
        #expect(online.state == .invalid)
        #expect(online.lastError?.code == "LICENSE_REVOKED")
        await server.stop()
    }

    @Test func deactivateFreesTheSeat() async throws {
        let server = try LiveServer()
        try await server.start()
        let seed = try await server.seed()
        let trusted = try await server.keyset()
        let first = Self.manager(server, sdkKey: seed.sdkKey, store: Self.store(), trusted: trusted)
        await first.checkOnLaunch()
        try await first.activate(key: seed.licenseKey)
        let second = Self.manager(server, sdkKey: seed.sdkKey, store: Self.store(), trusted: trusted)
        await second.checkOnLaunch()
        try await second.activate(key: seed.licenseKey)
        let third = Self.manager(server, sdkKey: seed.sdkKey, store: Self.store(), trusted: trusted)
        await third.checkOnLaunch()
        await third.waitUntilIdle()
        await #expect(throws: KeylightError.self) { try await third.activate(key: seed.licenseKey) }
        #expect(third.lastError?.code == "ACTIVATION_LIMIT_REACHED")

        try await first.deactivate()
        #expect(first.state == .trial(daysLeft: 14))
        try await third.activate(key: seed.licenseKey)
        #expect(third.state == .licensed)
        await server.stop()
    }

    @Test func rotationIsSeamlessForAppsThatTrustTheNextKey() async throws {
        let server = try LiveServer()
        try await server.start()
        let seed = try await server.seed()
        let original = try await server.keyset()
        let oldStore = Self.store()
        let oldApp = Self.manager(server, sdkKey: seed.sdkKey, store: oldStore, trusted: original)
        await oldApp.checkOnLaunch()
        try await oldApp.activate(key: seed.licenseKey)

        let rotated = try await server.admin("POST", "/signing-keys/rotate")
        let newKid = try #require(rotated["kid"] as? String)
        let updated = try await server.keyset()
        #expect(updated[newKid] != nil && original.keys.keys.allSatisfy { updated[$0] != nil })

        // An app updated to trust the new key refreshes onto it.
        let updatedApp = Self.manager(server, sdkKey: seed.sdkKey, store: oldStore, trusted: updated)
        await updatedApp.checkOnLaunch()
        await updatedApp.refreshIfNeeded(force: true)
        #expect(updatedApp.state == .licensed)
        #expect(updatedApp.lastError == nil)

        // An app that does not know the new key never accepts its leases, and keeps its old one.
        let staleStore = Self.store()
        let staleApp = Self.manager(server, sdkKey: seed.sdkKey, store: staleStore, trusted: original)
        await staleApp.checkOnLaunch()
        await #expect(throws: KeylightError.untrustedLease) { try await staleApp.activate(key: seed.licenseKey) }
        #expect(staleApp.state != .licensed)
        await server.stop()
    }
}
