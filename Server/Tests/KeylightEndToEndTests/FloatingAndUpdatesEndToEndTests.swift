import Foundation
import Keylight
import KeylightHTTPTransport
import KeylightCore
import KeylightServerTestSupport
import Testing

/// Floating seats and "updates until" licenses through the SDK against a live server, with a
/// 10-second heartbeat (the shortest a key type may have) and the real clock.
@MainActor
@Suite(.serialized, .timeLimit(.minutes(6))) struct FloatingAndUpdatesEndToEndTests {
    /// The network of one device, which a test can cut.
    final class Cable: Transport, @unchecked Sendable {
        // @unchecked: `plugged` is only touched under `lock` (Mutex needs macOS 15; the package supports 14).
        let inner: any Transport
        private let lock = NSLock()
        private var plugged = true
        init(_ inner: any Transport) { self.inner = inner }

        struct Unplugged: Error {}

        var connected: Bool {
            get { lock.withLock { plugged } }
            set { lock.withLock { plugged = newValue } }
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            guard connected else { throw Unplugged() }
            return try await inner.send(request)
        }
    }

    static func manager(_ server: LiveServer, sdkKey: String, trusted: Keyset, name: String, transport: (any Transport)? = nil, release: Date? = nil) -> LicenseManager {
        LicenseManager(configuration: Configuration(
            serverURL: server.url, tenantId: "acme", productId: "app", sdkKey: sdkKey, keyPrefix: "ACME",
            trustedKeys: trusted.keys, instanceName: name, appReleaseDate: release, fallbackEntitlements: ["view"],
            store: InMemoryStore(), transport: transport ?? HTTPClientTransport(baseURL: server.url)
        ))
    }

    /// A product and a license of a key type with `fields`.
    nonisolated static func seed(_ server: LiveServer, _ fields: [String: any Sendable]) async throws -> (sdkKey: String, licenseKey: String) {
        _ = try await server.admin("POST", "/tenants", ["id": "acme", "name": "Acme"])
        let product = try await server.admin("POST", "/tenants/acme/products", ["id": "app", "name": "App", "key_prefix": "ACME", "trial_duration_days": 0])
        var keyType: [String: Any] = ["id": "site", "display_name": "Site", "activation_limit": 1, "fallback_access": false, "entitlements": ["pro", "export"]]
        keyType.merge(fields) { $1 }
        _ = try await server.admin("POST", "/tenants/acme/products/app/key-types", keyType)
        let license = try await server.admin("POST", "/tenants/acme/products/app/licenses", ["key_type_id": "site"])
        return (try #require(product["sdk_key"] as? String), try #require(license["license_key"] as? String))
    }

    @Test func oneSeatMovesBetweenMacsAsTheyQuitGoSilentAndComeBack() async throws {
        let server = try LiveServer()
        try await server.start { $0.seatSweepInterval = .seconds(1) }
        let seed = try await Self.seed(server, ["floating": true, "heartbeat_seconds": 10])
        let trusted = try await server.tenantKeyset()
        let studioCable = Cable(HTTPClientTransport(baseURL: server.url))
        let studio = Self.manager(server, sdkKey: seed.sdkKey, trusted: trusted, name: "Studio", transport: studioCable)
        let laptopCable = Cable(HTTPClientTransport(baseURL: server.url))
        let laptop = Self.manager(server, sdkKey: seed.sdkKey, trusted: trusted, name: "Laptop", transport: laptopCable)
        for manager in [studio, laptop] { await manager.checkOnLaunch(); await manager.waitUntilIdle() }

        try await studio.activate(key: seed.licenseKey)
        #expect(studio.state == .licensed && studio.isFloating && studio.entitlements == ["export", "pro"])
        let firstLease = try #require(studio.leaseExpiresAt)
        // One seat: the laptop is told who holds it.
        do {
            try await laptop.activate(key: seed.licenseKey)
            Issue.record("a second device took a 1-seat floating license")
        } catch let error as KeylightError {
            #expect(error.code == "ACTIVATION_LIMIT_REACHED" && error.seats?.devices.map(\.name) == ["Studio"])
        }

        // The studio renews its seat on its own, every 5 s (half of a 10 s heartbeat).
        #expect(try await eventually(timeout: .seconds(15)) { (studio.leaseExpiresAt ?? .distantPast) > firstLease })
        #expect(studio.state == .licensed)

        // Quitting gives the seat back at once; the laptop takes it.
        #expect(await studio.releaseSeat())
        #expect(studio.state == .limited && studio.hasEntitlement("view") && !studio.hasEntitlement("pro"))
        try await laptop.activate(key: seed.licenseKey)
        #expect(laptop.state == .licensed)

        // The studio launches again: no seat free, so it runs limited and keeps trying.
        await studio.refreshIfNeeded(force: true)
        #expect(studio.state == .limited && studio.lastError?.code == "ACTIVATION_LIMIT_REACHED")

        // The laptop loses its network: within its heartbeat the server frees the seat, the
        // laptop stops being licensed, and the studio gets the seat on its own retries.
        laptopCable.connected = false
        #expect(try await eventually(timeout: .seconds(40)) { studio.state == .licensed })
        #expect(try await eventually(timeout: .seconds(40)) { laptop.state == .limited })
        #expect(laptop.reason.contains("heartbeat"))

        // Back online, the laptop asks again: its instance is over (not a verdict on the license),
        // it tries for a seat and finds none.
        laptopCable.connected = true
        await laptop.refreshIfNeeded(force: true)
        #expect(laptop.state == .limited && laptop.lastError?.code == "ACTIVATION_LIMIT_REACHED")
        #expect(studio.state == .licensed)
        await server.stop()
    }

    @Test func aLicenseRefusedWhileWithoutASeatIsAskedAboutAgainAtLaunch() async throws {
        let server = try LiveServer()
        try await server.start()
        let seed = try await Self.seed(server, ["floating": true, "heartbeat_seconds": 60])
        let licenseId = try #require(try await server.admin("GET", "/tenants/acme/products/app/licenses")["licenses"] as? [[String: Any]]).first?["id"] as? String
        let trusted = try await server.tenantKeyset()
        let store = InMemoryStore()
        func launch() async -> LicenseManager {
            let manager = LicenseManager(configuration: Configuration(
                serverURL: server.url, tenantId: "acme", productId: "app", sdkKey: seed.sdkKey, keyPrefix: "ACME",
                trustedKeys: trusted.keys, instanceName: "Studio", appReleaseDate: nil, store: store,
                transport: HTTPClientTransport(baseURL: server.url)
            ))
            await manager.checkOnLaunch()
            await manager.waitUntilIdle()
            return manager
        }
        let first = await launch()
        try await first.activate(key: seed.licenseKey)
        #expect(await first.releaseSeat())
        // Suspended while the app holds no seat: taking one is refused, a verdict.
        _ = try await server.admin("POST", "/tenants/acme/products/app/licenses/\(try #require(licenseId))/suspend")
        await first.refreshIfNeeded(force: true)
        #expect(first.state == .invalid && first.lastError?.code == "LICENSE_SUSPENDED")
        // Reinstated: the next launch asks again, takes a seat and is licensed, without the key typed again.
        _ = try await server.admin("POST", "/tenants/acme/products/app/licenses/\(try #require(licenseId))/reinstate")
        let second = await launch()
        #expect(second.state == .licensed, "\(second.reason)")
        await server.stop()
    }

    @Test func aBuildNewerThanTheUpdatesRunsLimitedAndOlderBuildsStayLicensed() async throws {
        let server = try LiveServer()
        try await server.start()
        let seed = try await Self.seed(server, ["activation_limit": 3, "updates_days": 365])
        let trusted = try await server.tenantKeyset()
        let now = Date()
        let older = Self.manager(server, sdkKey: seed.sdkKey, trusted: trusted, name: "Old build", release: now.addingTimeInterval(-30 * 86_400))
        let newer = Self.manager(server, sdkKey: seed.sdkKey, trusted: trusted, name: "New build", release: now.addingTimeInterval(400 * 86_400))
        let unaware = Self.manager(server, sdkKey: seed.sdkKey, trusted: trusted, name: "No release date")
        for manager in [older, newer, unaware] {
            await manager.checkOnLaunch()
            await manager.waitUntilIdle()
            try await manager.activate(key: seed.licenseKey)
        }
        #expect(older.state == .licensed && older.entitlements == ["export", "pro"])
        #expect(unaware.state == .licensed && unaware.entitlements == ["export", "pro"])
        #expect(newer.state == .limited && newer.entitlements == ["view"] && newer.reason.contains("newer than the updates"))

        let until = try #require(older.updatesEntitledUntil)
        #expect(abs(until.timeIntervalSince(now) - 365 * 86_400) < 120)
        #expect(older.coversUpdate(releasedAt: until) && !older.coversUpdate(releasedAt: until.addingTimeInterval(1)))
        #expect(older.newestCoveredUpdate(in: [until.addingTimeInterval(86_400), until.addingTimeInterval(-86_400)]) { $0 } == until.addingTimeInterval(-86_400))
        // A refresh keeps the date (it is the purchase's, signed into every lease).
        await newer.refreshIfNeeded(force: true)
        #expect(newer.state == .limited && newer.updatesEntitledUntil == until)
        await server.stop()
    }
}
