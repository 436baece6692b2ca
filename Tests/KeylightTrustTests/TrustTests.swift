import Crypto
import Foundation
import Keylight
import KeylightCore
@testable import KeylightTrust
import Testing

@Suite(.timeLimit(.minutes(3))) struct TrustTests {
    @Test func identityIsStableAndKeptInTheStore() throws {
        let store = InMemoryStore()
        let first = try DeviceIdentity.loadOrCreate(in: store, name: "Studio Mac")
        let again = try DeviceIdentity.loadOrCreate(in: store, name: "Renamed Mac")
        #expect(first.deviceId == again.deviceId && first.publicKey.rawRepresentation == again.publicKey.rawRepresentation)
        #expect(again.name == "Renamed Mac")
        #expect(try DeviceIdentity.loadOrCreate(in: InMemoryStore(), name: "x").deviceId != first.deviceId)
        try store.set(Data("garbage".utf8), for: DeviceIdentity.storeKey)
        #expect(throws: TrustError.storage) { try DeviceIdentity.loadOrCreate(in: store, name: "x") }
    }

    @Test func invitationsRoundTripAndRefuseEverythingElse() throws {
        let device = try TestDevice("Inviter")
        let invitation = try device.invite()
        let url = invitation.url(scheme: "myapp")
        #expect(url.hasPrefix("myapp://trust/"))
        let parsed = try Invitation.parse(url, scheme: "myapp", now: 1_800_000_000)
        #expect(parsed == invitation && parsed.name == "Inviter" && parsed.deviceId == device.node.identity.deviceId)
        #expect(parsed.secret.count == 32 && parsed.publicKey.rawRepresentation == device.node.identity.publicKey.rawRepresentation)

        func link(_ object: [String: Any]) -> String {
            "keylight://trust/" + Base64.encodeURLSafe(try! JSONSerialization.data(withJSONObject: object))
        }
        let good: [String: Any] = [
            "v": 1, "id": "abc", "device_id": "d", "name": "n", "key": Base64.encode(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation),
            "secret": Base64.encodeURLSafe([UInt8](repeating: 7, count: 32)), "exp": 1_800_000_100,
        ]
        #expect((try? Invitation.parse(link(good), now: 1_800_000_000)) != nil)
        func with(_ key: String, _ value: Any?) -> String {
            var object = good
            object[key] = value
            return link(object)
        }
        let cases: [(String, TrustError)] = [
            ("", .malformedInvitation), ("keylight://trust/", .malformedInvitation), ("keylight://trust/!!!", .malformedInvitation),
            ("keylight://pair/abc", .malformedInvitation), ("https://example.com/trust/abc", .wrongScheme("keylight")),
            ("keylight://trust/" + Base64.encodeURLSafe(Array("[1,2]".utf8)), .malformedInvitation),
            (with("v", 0), .unsupportedVersion(0)), (with("v", 2), .unsupportedVersion(2)), (with("v", nil), .malformedInvitation),
            (with("secret", Base64.encodeURLSafe([UInt8](repeating: 7, count: 31))), .malformedInvitation),
            (with("key", "AAAA"), .malformedInvitation), (with("id", ""), .malformedInvitation), (with("device_id", nil), .malformedInvitation),
            (with("exp", 1_800_000_000), .expiredInvitation), (with("exp", "soon"), .malformedInvitation),
            (String(repeating: "k", count: 5_000), .malformedInvitation),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text.prefix(60))") { try Invitation.parse(text, now: 1_800_000_000) }
        }
        #expect(TrustError.unsupportedVersion(0).message.contains("old") && TrustError.unsupportedVersion(2).message.contains("newer"))
    }

    @Test func pairingIsMutualOneTimeAndSurvivesARestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keylight-trust-\(UUID().uuidString)")
        let mac = try TestDevice("Mac", store: EncryptedFileStore(directory: directory))
        let phone = try TestDevice("iPhone")
        let invitation = try mac.invite()
        let (served, paired) = await session(server: { try await mac.node.serve(over: $0) }, client: { try await phone.node.pair(using: invitation, over: $0) })
        #expect(try served.get() == .paired(try #require(try mac.node.store.device(id: phone.node.identity.deviceId))))
        #expect(try paired.get().deviceId == mac.node.identity.deviceId)
        #expect(try phone.node.store.device(id: mac.node.identity.deviceId)?.name == "Mac")
        #expect(try mac.node.store.device(id: phone.node.identity.deviceId)?.name == "iPhone")

        // A restart: the same store on disk knows the phone and the same identity.
        let restarted = try TestDevice("Mac", store: EncryptedFileStore(directory: directory))
        #expect(restarted.node.identity.deviceId == mac.node.identity.deviceId)
        #expect(try restarted.node.store.devices().map(\.deviceId) == [phone.node.identity.deviceId])

        // The same invitation again (a photo of the QR code): refused, and nothing new trusted.
        let stranger = try TestDevice("Stranger")
        let (replayServed, replayPaired) = await session(server: { try await restarted.node.serve(over: $0) }, client: { try await stranger.node.pair(using: invitation, over: $0) })
        #expect(replayServed.trustError == .unknownInvitation)
        #expect(replayPaired.trustError == .refused("unknown_invitation"))
        #expect(try restarted.node.store.devices().count == 1 && stranger.node.store.devices().isEmpty)
    }

    @Test func aWrongSecretIsRefusedAndUsesTheInvitationUp() async throws {
        let mac = try TestDevice("Mac")
        let phone = try TestDevice("iPhone")
        let invitation = try mac.invite()
        let url = invitation.url()
        // Same invitation, one byte of the secret changed.
        var wire = try JSONSerialization.jsonObject(with: Base64.decode(url.dropFirst("keylight://trust/".count))!) as! [String: Any]
        var secret = invitation.secret
        secret[0] ^= 1
        wire["secret"] = Base64.encodeURLSafe(secret)
        let forged = try Invitation.parse("keylight://trust/" + Base64.encodeURLSafe(try JSONSerialization.data(withJSONObject: wire)), now: 1_800_000_000)
        let (served, paired) = await session(server: { try await mac.node.serve(over: $0) }, client: { try await phone.node.pair(using: forged, over: $0) })
        #expect(served.trustError == .wrongSecret && paired.trustError == .refused("wrong_secret"))
        // The genuine secret no longer works either: one guess per invitation.
        let (again, _) = await session(server: { try await mac.node.serve(over: $0) }, client: { try await phone.node.pair(using: invitation, over: $0) })
        #expect(again.trustError == .unknownInvitation)
        #expect(try mac.node.store.devices().isEmpty)
    }

    @Test func expiredInvitationsAreRefusedOnBothSides() async throws {
        let clock = Clock()
        let mac = try TestDevice("Mac", now: { clock.now })
        let phone = try TestDevice("iPhone", now: { clock.now })
        let invitation = try mac.invite(lifetime: 60)
        clock.now += 61
        let (_, paired) = await session(server: { try await mac.node.serve(over: $0) }, client: { try await phone.node.pair(using: invitation, over: $0) })
        #expect(paired.trustError == .expiredInvitation)
        // An inviter refuses it too, whatever the acceptor's clock says.
        let lenient = try TestDevice("iPhone", now: { clock.now - 120 })
        let (served, _) = await session(server: { try await mac.node.serve(over: $0) }, client: { try await lenient.node.pair(using: invitation, over: $0) })
        #expect(served.trustError == .unknownInvitation)
    }

    @Test func anImpostorInviterIsCaught() async throws {
        let mac = try TestDevice("Mac")
        let impostor = try TestDevice("Mac (fake)")
        let phone = try TestDevice("iPhone")
        let invitation = try mac.invite()
        // The impostor learned the secret (it can accept it) but not the Mac's identity key.
        try impostor.node.store.remember(issued: invitation, now: 1_800_000_000)
        let (_, paired) = await session(
            server: { try await impostor.node.serve(over: $0) }, client: { try await phone.node.pair(using: invitation, over: $0) },
            tamperServer: { message in
                var message = message
                if message.type == "challenge" { message.device_id = invitation.deviceId }
                return message
            }
        )
        #expect(paired.trustError == .badSignature)
        #expect(try phone.node.store.devices().isEmpty)
    }

    /// Pairs two devices, for the authentication tests.
    static func paired() async throws -> (TestDevice, TestDevice) {
        let mac = try TestDevice("Mac")
        let phone = try TestDevice("iPhone")
        let invitation = try mac.invite()
        let (served, _) = await session(server: { try await mac.node.serve(over: $0) }, client: { try await phone.node.pair(using: invitation, over: $0) })
        _ = try served.get()
        return (mac, phone)
    }

    @Test func pairedDevicesAuthenticateWithFreshSignedChallenges() async throws {
        let (mac, phone) = try await Self.paired()
        let (served, connected) = await session(server: { try await mac.node.serve(over: $0) }, client: { try await phone.node.authenticate(over: $0) })
        guard case .authenticated(let who) = try served.get() else { Issue.record("not an authentication"); return }
        #expect(who.deviceId == phone.node.identity.deviceId)
        #expect(try connected.get().deviceId == mac.node.identity.deviceId)
        #expect(try mac.node.store.device(id: phone.node.identity.deviceId)?.lastConnectedAt != nil)
        // No shared secret travels: only ids, nonces and signatures.
        let (_, _) = await session(server: { try await mac.node.serve(over: $0) }, client: { channel in
            let result = try await phone.node.authenticate(over: channel)
            #expect(channel.sent.allSatisfy { $0.secret == nil })
            return result
        })
    }

    @Test func tamperedOrReplayedChallengesAreRejected() async throws {
        let (mac, phone) = try await Self.paired()
        // A flipped bit in the listener's signature.
        let (_, tampered) = await session(
            server: { try await mac.node.serve(over: $0) }, client: { try await phone.node.authenticate(over: $0) },
            tamperServer: { message in
                guard message.type == "challenge", let signature = message.signature, var bytes = Base64.decode(signature) else { return message }
                var message = message
                bytes[0] ^= 1
                message.signature = Base64.encode(bytes)
                return message
            }
        )
        #expect(tampered.trustError == .badSignature)

        // A recorded proof replayed into a new session (new nonces) proves nothing.
        let recorded = await session(server: { try await mac.node.serve(over: $0) }, client: { channel in
            _ = try await phone.node.authenticate(over: channel)
            return channel.sent
        })
        let messages = try recorded.1.get()
        let oldHello = try #require(messages.first { $0.type == "hello" }), oldProof = try #require(messages.first { $0.type == "proof" })
        let (replayed, _) = await session(server: { try await mac.node.serve(over: $0) }, client: { channel in
            try await channel.send(oldHello)
            _ = try await channel.receive()
            try await channel.send(oldProof)
            return try await channel.receive()
        })
        #expect(replayed.trustError == .badSignature)

        // A connector's nonce changed on the way: the listener's signature no longer matches it.
        let (_, rewritten) = await session(
            server: { try await mac.node.serve(over: $0) }, client: { try await phone.node.authenticate(over: $0) },
            tamperClient: { message in
                var message = message
                if message.type == "hello" { message.nonce = TrustNode.nonce() }
                return message
            }
        )
        #expect(rewritten.trustError == .badSignature)
    }

    @Test func unknownAndRevokedDevicesAreRefused() async throws {
        let (mac, phone) = try await Self.paired()
        let stranger = try TestDevice("Stranger")
        let (served, connected) = await session(server: { try await mac.node.serve(over: $0) }, client: { try await stranger.node.authenticate(over: $0) })
        #expect(served.trustError == .unknownDevice && connected.trustError == .refused("unknown_device"))
        #expect(try mac.node.store.revoke(deviceId: phone.node.identity.deviceId))
        #expect(try !mac.node.store.revoke(deviceId: phone.node.identity.deviceId))
        let (revoked, _) = await session(server: { try await mac.node.serve(over: $0) }, client: { try await phone.node.authenticate(over: $0) })
        #expect(revoked.trustError == .unknownDevice)
        // And the other way round: the phone revokes the Mac, so the Mac's answer is not trusted.
        let (mac2, phone2) = try await Self.paired()
        try phone2.node.store.revoke(deviceId: mac2.node.identity.deviceId)
        let (_, refused) = await session(server: { try await mac2.node.serve(over: $0) }, client: { try await phone2.node.authenticate(over: $0) })
        #expect(refused.trustError == .unknownDevice)
        // Garbage first messages.
        let (garbage, _) = await session(server: { try await mac.node.serve(over: $0) }, client: { channel in try await channel.send(TrustMessage(type: "launch-missiles")) })
        #expect(garbage.trustError == .protocolError)
        #expect(throws: TrustError.protocolError) { try TrustFraming.decode(Data("not json".utf8)) }
        #expect(throws: TrustError.protocolError) { try TrustFraming.decode(Data(repeating: 0x20, count: 20_000)) }
    }
}

final class Clock: @unchecked Sendable {
    // @unchecked: tests change `now` between sessions, never during one.
    var now: Int64 = 1_800_000_000
}
