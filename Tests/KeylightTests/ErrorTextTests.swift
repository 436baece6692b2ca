import Foundation
@testable import Keylight
import KeylightCore
import Testing

/// Errors people can read and code can branch on, and two configuration mistakes that used to
/// read as "offline" and be retried for ever.
@MainActor @Suite(.timeLimit(.minutes(2))) struct ErrorTextTests {
    @Test func everyKindHasWordsAndAlertsShowThem() {
        for kind in KeylightError.Kind.allCases where kind != .server {
            #expect(KeylightError.english[kind] != nil, "no text for \(kind)")
        }
        let error: any Error = KeylightError.server(code: "ACTIVATION_LIMIT_REACHED", message: "3 of 3 in use")
        #expect(error.localizedDescription == "This license is already in use on its maximum number of devices.")
        #expect((error as? LocalizedError)?.recoverySuggestion == "Free a device you no longer use, then activate this one.")
        #expect((error as? LocalizedError)?.failureReason == "3 of 3 in use")
        // A code this SDK does not know keeps the server's own words.
        let unknown = KeylightError.server(code: "SOMETHING_NEW", message: "the server's words")
        #expect(unknown.kind == .server)
        #expect(unknown.localizedDescription == "the server's words")
        #expect(!unknown.localizedDescription.contains("error 1"))
    }

    @Test func kindsAndRetries() {
        #expect(KeylightError.transient("offline").kind == .network)
        #expect(KeylightError.transient("offline").isRetryable)
        #expect(KeylightError.server(code: "HTTP_503", message: "").kind == .serverUnavailable)
        #expect(KeylightError.server(code: "RATE_LIMITED", message: "").isRetryable)
        #expect(KeylightError.storageLocked.isRetryable)
        for code in ["LICENSE_REVOKED", "LICENSE_SUSPENDED", "ACTIVATION_LIMIT_REACHED", "NOT_FOUND", "UNAUTHORIZED"] {
            #expect(!KeylightError.server(code: code, message: "").isRetryable, "\(code)")
        }
        #expect(KeylightError.invalidKeyFormat.kind == .invalidKeyFormat && !KeylightError.invalidKeyFormat.isRetryable)
        #expect(KeylightError.appTransportSecurity.kind == .appTransportSecurity && !KeylightError.appTransportSecurity.isRetryable)
        #expect(KeylightError.missingNetworkEntitlement.kind == .missingNetworkEntitlement)
        #expect(KeylightError.configuration("x").kind == .configuration)
    }

    @Test func aBlockedHTTPServerIsATSNotOffline() {
        let failure = NetworkFailure(entitlement: { _ in nil })
        #expect(failure.error(for: URLError(.appTransportSecurityRequiresSecureConnection)) == .appTransportSecurity)
        #expect(failure.error(for: NSError(domain: NSURLErrorDomain, code: -1022)) == .appTransportSecurity)
        #expect(failure.error(for: URLError(.notConnectedToInternet)).kind == .network)
        #expect(failure.error(for: NSError(domain: "other", code: -1022)).kind == .network)
        #expect(KeylightError.appTransportSecurity.recoverySuggestion?.contains("https://") == true)
    }

    @Test func aSandboxWithoutTheNetworkClientEntitlementSaysSo() {
        let sandboxed = NetworkFailure(entitlement: { $0 == "com.apple.security.app-sandbox" ? true as Any : nil })
        #expect(sandboxed.error(for: URLError(.cannotFindHost)) == .missingNetworkEntitlement)
        let allowed = NetworkFailure(entitlement: { _ in NSNumber(value: true) })
        #expect(allowed.error(for: URLError(.cannotFindHost)).kind == .network)
        let unsandboxed = NetworkFailure(entitlement: { _ in nil })
        #expect(unsandboxed.error(for: URLError(.cannotFindHost)).kind == .network)
        #expect(KeylightError.missingNetworkEntitlement.recoverySuggestion?.contains("com.apple.security.network.client") == true)
    }

    /// Neither mistake is retried on a timer: only a new build fixes it.
    @Test func configurationMistakesAreNotRetriedForEver() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = try await Fixture.activated(server: server, store: InMemoryStore())
        let blocked = Fixture.manager(server: server, store: InMemoryStore()) { $0.transport = FailingTransport(error: URLError(.appTransportSecurityRequiresSecureConnection)) }
        await blocked.checkOnLaunch()
        await blocked.waitUntilIdle()
        #expect(blocked.lastError == .appTransportSecurity)
        #expect(blocked.nextRefreshAt == nil)
        // An ordinary network failure is retried.
        server.mode = .offline
        await manager.refreshIfNeeded(force: true)
        #expect(manager.lastError?.kind == .network)
        #expect(manager.nextRefreshAt != nil)
    }

    @Test func translationsComeFromTheBundleWhenItExists() throws {
        #expect(SDKStrings.localized("network.description", english: "English", bundle: nil) == "English")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("keylight-strings-\(UUID().uuidString)")
        let bundleURL = folder.appendingPathComponent("Keylight_Keylight.resources")
        let table = bundleURL.appendingPathComponent("en.lproj")
        try FileManager.default.createDirectory(at: table, withIntermediateDirectories: true)
        try Data(#""network.description" = "Keine Verbindung zum Lizenzserver.";"#.utf8).write(to: table.appendingPathComponent("Keylight.strings"))
        let bundle = try #require(SDKStrings.findBundle(named: ["Keylight_Keylight.resources"], in: [nil, folder]))
        #expect(SDKStrings.localized("network.description", english: "English", bundle: bundle) == "Keine Verbindung zum Lizenzserver.")
        #expect(SDKStrings.localized("missing.key", english: "English", bundle: bundle) == "English")
        #expect(SDKStrings.findBundle(named: ["Keylight_Keylight.resources"], in: [folder.appendingPathComponent("none")]) == nil)
    }
}

struct FailingTransport: Transport {
    let error: any Error & Sendable
    func send(_ request: TransportRequest) async throws -> TransportResponse { throw error }
}
