import Crypto
import Foundation
import Keylight
import KeylightHTTPTransport
import KeylightCore
import Testing

/// The SDK against a live server on a loopback port: the whole path an app takes.
@MainActor
@Suite(.serialized, .timeLimit(.minutes(6))) struct EndToEndTests {
    static func manager(_ server: LiveServer, sdkKey: String, store: any SecureStore, trusted: Keyset) -> LicenseManager {
        LicenseManager(configuration: Configuration(
            serverURL: server.url, tenantId: "acme", productId: "app", sdkKey: sdkKey, keyPrefix: "ACME",
            trustedKeys: trusted.keys, trialDaysSeed: 3, instanceName: "E2E Mac", store: store,
            transport: HTTPClientTransport(baseURL: server.url)
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

    /// Seed 000's order with two app builds: build 1 pins only the key it shipped with; after
    /// `prepare`, build 2 pins that key and the published next one. `rotate` then switches signing:
    /// build 2 keeps verifying without a gap; build 1 is never handed anything it would trust, keeps
    /// its current lease (no verdict, no lock-out before it runs out) and recovers once updated.
    @Test func stagedRotationWithAnOldAndANewAppBuild() async throws {
        let server = try LiveServer()
        try await server.start()
        let seed = try await server.seed()
        let build1Keys = try await server.tenantKeyset()
        let build1Store = Self.store()
        let build1 = Self.manager(server, sdkKey: seed.sdkKey, store: build1Store, trusted: build1Keys)
        await build1.checkOnLaunch()
        try await build1.activate(key: seed.licenseKey)
        #expect(build1.state == .licensed)

        let prepared = try await server.admin("POST", "/tenants/acme/signing-keys/prepare")
        let next = try #require(prepared["kid"] as? String)
        // Signing has not moved: build 1 still refreshes cleanly.
        await build1.refreshIfNeeded(force: true)
        #expect(build1.state == .licensed && build1.lastError == nil)
        let build2Keys = try await server.tenantKeyset()
        #expect(build2Keys[next] != nil && build1Keys.keys.keys.allSatisfy { build2Keys[$0] != nil })

        // The customer updates to build 2 (same store), then the developer rotates.
        let build2Store = Self.store()
        let build2 = Self.manager(server, sdkKey: seed.sdkKey, store: build2Store, trusted: build2Keys)
        await build2.checkOnLaunch()
        try await build2.activate(key: seed.licenseKey)
        let rotated = try await server.admin("POST", "/tenants/acme/signing-keys/rotate")
        #expect(rotated["kid"] as? String == next)
        await build2.refreshIfNeeded(force: true)
        #expect(build2.state == .licensed && build2.lastError == nil)
        #expect(try await server.tenantKeyset(primaryKid: true) == next)

        // Build 1 (not updated) gets leases from a kid it does not know: refused, but nothing decided.
        await build1.refreshIfNeeded(force: true)
        #expect(build1.lastError == .untrustedLease)
        #expect(build1.state == .licensed)  // its own lease still runs
        // Updated later, on the same store: it verifies the new leases.
        let build1Updated = Self.manager(server, sdkKey: seed.sdkKey, store: build1Store, trusted: build2Keys)
        await build1Updated.checkOnLaunch()
        await build1Updated.refreshIfNeeded(force: true)
        #expect(build1Updated.state == .licensed && build1Updated.lastError == nil)
        await server.stop()
    }

    /// Protocol 6.1 end to end: a validate for another machine's instance is a 422 verdict, a wrong
    /// product id (404) is a configuration error that leaves the customer licensed.
    @Test func verdictsAndConfigurationErrorsAgainstALiveServer() async throws {
        let server = try LiveServer()
        try await server.start()
        let seed = try await server.seed()
        let trusted = try await server.tenantKeyset()
        let store = Self.store()
        let manager = Self.manager(server, sdkKey: seed.sdkKey, store: store, trusted: trusted)
        await manager.checkOnLaunch()
        try await manager.activate(key: seed.licenseKey)
        let instance = try #require(manager.instanceId)

        let foreign = try await server.call("POST", "/acme/app/validate", ["license_key": seed.licenseKey, "instance_id": instance, "machine_hash": "another-mac"],
                                           headers: ["X-Keylight-SDK-Key": seed.sdkKey])
        #expect(foreign.status == 422 && foreign.json["code"] as? String == "INSTANCE_INACTIVE" && foreign.json["valid"] as? Bool == false)

        // The same app built with a wrong product id: 404 on every call, and the customer stays licensed.
        let misconfigured = LicenseManager(configuration: Configuration(
            serverURL: server.url, tenantId: "acme", productId: "app-typo", sdkKey: seed.sdkKey, keyPrefix: "ACME",
            trustedKeys: trusted.keys, instanceName: "E2E Mac", store: store, transport: HTTPClientTransport(baseURL: server.url)
        ))
        await misconfigured.checkOnLaunch()
        await misconfigured.refreshIfNeeded(force: true)
        #expect(misconfigured.lastError?.code == "NOT_FOUND")
        #expect(misconfigured.state == .licensed)

        // The developer deactivates the instance: a verdict, acted on.
        _ = try await server.admin("POST", "/tenants/acme/products/app/licenses/\(seed.licenseId)/instances/\(instance)/deactivate")
        await manager.refreshIfNeeded(force: true)
        #expect(manager.state == .invalid && manager.lastError?.code == "INSTANCE_INACTIVE")
        await server.stop()
    }

    /// Requests shaped exactly as keylight-rust 0.3.3 sends them (its client.rs): the tenant keyset
    /// without headers, an untrimmed key, `platform: "macos"`, an app version of any length, an
    /// 8-hex request id, no nonce; and the answers it reads.
    @Test func theHostedServicesRustClientWireShapes() async throws {
        let server = try LiveServer()
        try await server.start()
        let seed = try await server.seed()
        let keyset = try await server.call("GET", "/acme/.well-known/keylight-keys")
        #expect(keyset.status == 200 && keyset.json["primary_kid"] is String)
        let keys = try #require(keyset.json["keys"] as? [[String: Any]])
        #expect(!keys.isEmpty && keys.allSatisfy { $0["kid"] is String && $0["public_key"] is String })
        let headers = ["X-Keylight-SDK-Key": seed.sdkKey, "X-Keylight-Request-Id": "1a2b3c4d"]
        func json(_ fields: [String: String]) throws -> Data { try JSONSerialization.data(withJSONObject: fields) }
        let telemetry = ["sdk_version": "0.3.3", "platform": "macos", "app_version": "3.1.0+" + String(repeating: "build.", count: 20)]
        let activated = try await server.call("POST", "/acme/app/activate", raw: try json([
            "license_key": " \(seed.licenseKey.lowercased()) ", "instance_name": "studio-mac", "machine_hash": String(repeating: "ab", count: 32),
            "free_tier_instance_id": UUID().uuidString,
        ].merging(telemetry) { $1 }), headers: headers)
        #expect(activated.status == 200 && activated.json["activated"] as? Bool == true)
        #expect(activated.json["instance_id"] is String && activated.json["lease"] is [String: Any] && activated.json.keys.contains("license_expires_at"))
        let instance = try #require(activated.json["instance_id"] as? String)
        let validated = try await server.call("POST", "/acme/app/validate", raw: try json([
            "license_key": seed.licenseKey, "instance_id": instance, "machine_hash": String(repeating: "ab", count: 32),
        ].merging(telemetry) { $1 }), headers: headers)
        #expect(validated.status == 200 && validated.json["valid"] as? Bool == true)
        let keyless = try await server.call("POST", "/acme/app/keyless", raw: try json(["instance_id": UUID().uuidString, "state": "expired", "machine_hash": "ab"].merging(telemetry) { $1 }), headers: headers)
        #expect(keyless.status == 200)
        let refused = try await server.call("POST", "/acme/app/validate", raw: try json(["license_key": seed.licenseKey, "instance_id": UUID().uuidString].merging(telemetry) { $1 }), headers: headers)
        #expect(refused.status == 422 && refused.json["valid"] as? Bool == false && refused.json["lease"] == nil && refused.json["error"] is String)
        await server.stop()
    }
}
