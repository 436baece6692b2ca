import Foundation
@testable import Keylight
import KeylightCore
import Testing

/// Issue 39, point 3: the state a launch reads is kept in a versioned compact layout; states an
/// earlier SDK kept as JSON are read once and rewritten; hostile bytes are refused, never a crash.
@MainActor
@Suite(.timeLimit(.minutes(2))) struct PersistedStateLayoutTests {
    /// Every field set, so a field the layout forgets cannot survive the round trip.
    static func everyFieldSet() -> PersistedState {
        var state = PersistedState()
        state.licenseKey = Fixture.key
        state.instanceId = "instance-ü-1"
        state.lease = Lease(kid: "k1", licenseKeyHash: String(repeating: "ab", count: 32), instanceId: "instance-ü-1", issuedAt: 1_781_000_000,
                            expiresAt: Int64.max, status: .fallback, signature: String(repeating: "A", count: 86) + "==", entitlements: [])
        state.config = SignedProductConfig(trialDurationDays: -3, freeTierEnabled: true, issuedAt: 0, expiresAt: -1, kid: "c", signature: "sig")
        state.trialStartedAt = Int64.min
        state.lastSeen = -1
        state.serverSeen = 1_781_076_246
        state.lastRefresh = 1
        state.lastAttempt = 2
        state.lastBeacon = 3
        state.keylessInstanceId = "keyless"
        state.rejection = "LICENSE_REVOKED"
        state.leaseVerification = "verified"
        state.configVerification = "offline"
        state.awaitingVerifiedLease = false
        state.offlineActivation = true
        state.pendingDeactivationProof = String(repeating: "p", count: 300)
        state.surrenderedInstances = ["a", "", "ç"]
        state.floatingHeartbeat = 90
        state.leaseReceivedAt = 4
        state.licenseExpiresAt = 5
        state.customerEmail = "buyer@example.com"
        state.keyTypeName = "Prö"
        state.upgradeURL = "https://acme.example/upgrade?l=1"
        return state
    }

    @Test func everyFieldSurvivesTheCompactLayout() throws {
        let state = Self.everyFieldSet()
        // A field added to PersistedState and not set above fails here first.
        let unset = Mirror(reflecting: state).children.filter { child in
            if case Optional<Any>.none = child.value { return true } else { return false }
        }.map { $0.label ?? "?" }
        #expect(unset.isEmpty, "set these in everyFieldSet(): \(unset)")

        let encoded = state.compactEncoded()
        #expect(encoded.starts(with: PersistedState.compactHeader))
        let (decoded, isCompact) = try PersistedState.decode(encoded)
        #expect(isCompact)
        #expect(decoded == state)
        // An empty state is the header alone.
        #expect(PersistedState().compactEncoded() == Data(PersistedState.compactHeader))
        #expect(try PersistedState.decodeCompact(Data(PersistedState.compactHeader)) == PersistedState())
    }

    @Test func aJSONStateFromAnEarlierSDKIsReadOnceAndRewritten() async throws {
        let server = FakeServer(clock: TestClock())
        let store = InMemoryStore()
        _ = try await Fixture.activated(server: server, store: store)
        let kept = try PersistedState.load(from: store)
        #expect(kept.lease != nil)
        // What an earlier SDK kept: the same state as JSON.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try store.set(try encoder.encode(kept), for: PersistedState.storeKey)

        server.mode = .offline
        let next = Fixture.manager(server: server, store: store)
        await next.checkOnLaunch()
        #expect(next.state == .licensed)
        // Written off the main actor: on the store once the manager is idle.
        await next.waitUntilIdle()
        let rewritten = try #require(try store.data(for: PersistedState.storeKey))
        #expect(rewritten.starts(with: PersistedState.compactHeader))
        #expect(try PersistedState.decode(rewritten).state.licenseKey == Fixture.key)
        #expect(try PersistedState.decode(rewritten).state.lease == kept.lease)

        let third = Fixture.manager(server: server, store: store)
        await third.checkOnLaunch()
        #expect(third.state == .licensed)
    }

    @Test func hostileBytesAreRefusedNeverACrash() throws {
        let encoded = [UInt8](Self.everyFieldSet().compactEncoded())
        // Every truncation: a field cut short is refused (cuts between fields decode a prefix).
        var refused = 0
        for count in PersistedState.compactHeader.count..<encoded.count {
            do { _ = try PersistedState.decodeCompact(Data(encoded.prefix(count))) } catch { refused += 1 }
        }
        #expect(refused > encoded.count / 2, "\(refused) of \(encoded.count) truncations refused")
        // Random damage after the header: decoded or refused, never a trap.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<3_000 {
            var damaged = encoded
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                damaged[Int.random(in: PersistedState.compactHeader.count..<damaged.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            _ = try? PersistedState.decodeCompact(Data(damaged))
        }
        let header = PersistedState.compactHeader
        // A length past the end, a length beyond the limit, a wrong-sized integer, a bad flag,
        // a lease without its signature, text that is not UTF-8, a later version.
        let cases: [[UInt8]] = [
            header + [1, 5, 0x41],
            header + [1, 0xFF, 0xFF, 0xFF, 0x7F],
            header + [5, 4, 1, 2, 3, 4],
            header + [15, 1, 2],
            header + [3, 3, 1, 1, 0x6B],
            header + [1, 2, 0xC3, 0x28],
            [0x4B, 0x4C, 0x53, 0x02],
        ]
        for bytes in cases {
            #expect(throws: CompactStateError.self) { try PersistedState.decodeCompact(Data(bytes)) }
        }
        #expect(throws: CompactStateError.unknownVersion) { try PersistedState.decode(Data([0x4B, 0x4C, 0x53, 0x02])) }
        // A tag this SDK does not know (a later SDK's field) is skipped.
        let later = try PersistedState.decodeCompact(Data(header + [200, 3, 1, 2, 3, 1, 1, 0x4B]))
        #expect(later.licenseKey == "K")
    }

    @Test func theCompactLayoutIsSmallerThanJSON() throws {
        let state = Self.everyFieldSet()
        let json = try JSONEncoder().encode(state)
        #expect(state.compactEncoded().count < json.count * 3 / 4, "\(state.compactEncoded().count) bytes against JSON's \(json.count)")
    }
}
