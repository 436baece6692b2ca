import Foundation
@testable import Keylight
import KeylightCore
import Testing

@MainActor
@Suite(.timeLimit(.minutes(3))) struct VerificationModeTests {
    @Test func disabledSendsNoNonce() async throws {
        let server = FakeServer(clock: TestClock())
        server.signsResponses = true
        let manager = Fixture.manager(server: server, mode: .disabled)
        await manager.checkOnLaunch()
        try await manager.activate(key: Fixture.key)
        #expect(server.requests.allSatisfy { $0.headers["X-Keylight-Nonce"] == nil })
        #expect(manager.lastVerification == .notRequested)
    }

    @Test func verifyingModesSendAFreshNonceAndVerify() async throws {
        let server = FakeServer(clock: TestClock())
        server.signsResponses = true
        let manager = Fixture.manager(server: server, mode: .enforced)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        try await manager.activate(key: Fixture.key)
        await manager.refreshIfNeeded(force: true)
        let nonces = server.requests.compactMap { $0.headers["X-Keylight-Nonce"] }
        #expect(nonces.count == server.requests.count && nonces.count >= 3)
        #expect(Set(nonces).count == nonces.count)
        #expect(nonces.allSatisfy { ResponseNonce(header: $0) != nil })
        #expect(manager.lastVerification == .verified)
        #expect(manager.state == .licensed)
    }

    @Test func enforcedRefusesUnsignedResponsesAndKeepsTheState() async throws {
        let server = FakeServer(clock: TestClock())
        server.signsResponses = true
        let manager = Fixture.manager(server: server, mode: .enforced)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        try await manager.activate(key: Fixture.key)
        let updates = manager.stateChanges()
        server.signsResponses = false
        server.mode = .status(422, code: "LICENSE_REVOKED", retryAfter: nil)  // an unsigned refusal
        await manager.refreshIfNeeded(force: true)
        #expect(manager.state == .licensed)
        #expect(manager.lastVerification == .failed(reason: "missing_signature"))
        #expect(manager.lastError?.code == "SIGNATURE_VERIFICATION_FAILED")
        for await update in updates {
            #expect(update == LicenseUpdate(state: .licensed, verification: .failed(reason: "missing_signature")))
            break
        }
        let fresh = Fixture.manager(server: server, mode: .enforced)
        server.mode = .normal
        await fresh.checkOnLaunch()
        await fresh.waitUntilIdle()
        await #expect(throws: KeylightError.signatureVerificationFailed("missing_signature")) { try await fresh.activate(key: Fixture.key) }
        #expect(fresh.instanceId == nil)
    }

    @Test func informationalReportsButActs() async throws {
        let server = FakeServer(clock: TestClock())
        let manager = Fixture.manager(server: server, mode: .informational)
        await manager.checkOnLaunch()
        try await manager.activate(key: Fixture.key)
        #expect(manager.state == .licensed)
        #expect(manager.lastVerification == .failed(reason: "missing_signature"))
        server.mode = .status(422, code: "LICENSE_REVOKED", retryAfter: nil)
        await manager.refreshIfNeeded(force: true)
        #expect(manager.state == .invalid)
    }

    @Test func switchingFromDisabledDiscardsUnverifiedCache() async throws {
        let server = FakeServer(clock: TestClock())
        let store = InMemoryStore()
        let disabled = Fixture.manager(server: server, store: store, mode: .disabled)
        await disabled.checkOnLaunch()
        await disabled.waitUntilIdle()
        try await disabled.activate(key: Fixture.key)
        #expect(disabled.state == .licensed)

        server.mode = .offline
        let verifying = Fixture.manager(server: server, store: store, mode: .informational)
        await verifying.checkOnLaunch()
        #expect(verifying.state == .expired)
        #expect(verifying.reason.contains("verified"))
        await verifying.waitUntilIdle()

        server.mode = .normal
        server.signsResponses = true
        await verifying.refreshIfNeeded(force: true)
        #expect(verifying.state == .licensed)
        #expect(verifying.lastVerification == .verified)
        // Now verified, it survives a relaunch in enforced mode too.
        server.mode = .offline
        let enforced = Fixture.manager(server: server, store: store, mode: .enforced)
        await enforced.checkOnLaunch()
        #expect(enforced.state == .licensed)
    }
}
