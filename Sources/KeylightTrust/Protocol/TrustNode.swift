import Crypto
import Foundation
import Keylight
import KeylightCore

/// One device's side of pairing and authentication.
///
/// Pairing (the device that scanned the invitation connects to the one that showed it):
/// 1. acceptor → inviter `pair`: invitation id, the one-time secret, its device id, name, key, nonce A.
/// 2. inviter checks the secret in constant time and uses it up, → `challenge`: its nonce B and
///    its signature over the transcript, proving it holds the key the invitation named.
/// 3. acceptor verifies, → `proof`: its signature over the transcript, proving it holds its key.
/// 4. inviter verifies and trusts the acceptor, → `welcome`; the acceptor then trusts the inviter.
///
/// Authentication (already paired): `hello` (id, nonce A) → `challenge` (id, nonce B, signature)
/// → `proof` (signature) → `welcome`. Both nonces are fresh and both are signed, with the roles
/// and both ids, so a recorded exchange or a picture of the old QR code proves nothing later.
public struct TrustNode: Sendable {
    public let identity: DeviceIdentity
    public let store: TrustStore
    /// Decides whether invitations have expired; tests move it.
    let clock: any WallClock

    public init(identity: DeviceIdentity, store: TrustStore, clock: any WallClock = SystemWallClock()) {
        self.identity = identity
        self.store = store
        self.clock = clock
    }

    /// A node whose time is read from `now` (whole Unix seconds): the form this initialiser had
    /// before it took a `WallClock`, kept so existing callers still build.
    public init(identity: DeviceIdentity, store: TrustStore, now: @escaping @Sendable () -> Int64) {
        self.init(identity: identity, store: store, clock: SecondsWallClock(seconds: now))
    }

    func now() -> Int64 { clock.unixSeconds }

    // MARK: Transcripts

    static func transcript(_ purpose: String, role: String, _ parts: [String]) -> [UInt8] {
        Array(([ "keylight-trust-v1", purpose, role] + parts).joined(separator: "\n").utf8)
    }

    static func nonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64.encodeURLSafe((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    private static func verify(_ signature: String?, _ transcript: [UInt8], key: Curve25519.Signing.PublicKey) -> Bool {
        guard let signature, let bytes = Base64.decode(signature) else { return false }
        return key.isValidSignature(bytes, for: transcript)
    }

    private static func expect(_ message: TrustMessage, _ type: String) throws(TrustError) {
        if message.type == TrustMessage.refused { throw .refused(message.reason ?? "no reason given") }
        guard message.type == type else { throw .protocolError }
    }

    private static func validNonce(_ nonce: String?) -> String? {
        guard let nonce, let bytes = Base64.decode(nonce), bytes.count == 32 else { return nil }
        return nonce
    }

    // MARK: Acceptor and connector

    /// Pairs with the device that issued `invitation` over `channel`; both sides end up trusting
    /// each other. Answers the inviter as now trusted.
    public func pair(using invitation: Invitation, over channel: any TrustChannel) async throws -> TrustedDevice {
        guard invitation.expiresAt > now() else { throw TrustError.expiredInvitation }
        let nonceA = Self.nonce()
        var request = TrustMessage(type: TrustMessage.pair)
        request.invitation_id = invitation.id
        request.secret = Base64.encodeURLSafe(invitation.secret)
        request.device_id = identity.deviceId
        request.name = identity.name
        request.key = Base64.encode(identity.publicKey.rawRepresentation)
        request.nonce = nonceA
        try await channel.send(request)

        let challenge = try await channel.receive()
        try Self.expect(challenge, TrustMessage.challenge)
        guard challenge.device_id == invitation.deviceId, let nonceB = Self.validNonce(challenge.nonce) else { throw TrustError.protocolError }
        let parts = [invitation.id, invitation.deviceId, identity.deviceId, request.key!, nonceA, nonceB]
        guard Self.verify(challenge.signature, Self.transcript("pair", role: "inviter", parts), key: invitation.publicKey) else {
            throw TrustError.badSignature
        }
        var proof = TrustMessage(type: TrustMessage.proof)
        proof.signature = Base64.encode(try identity.sign(Self.transcript("pair", role: "acceptor", parts)))
        try await channel.send(proof)
        try Self.expect(try await channel.receive(), TrustMessage.welcome)

        let device = TrustedDevice(deviceId: invitation.deviceId, name: invitation.name, publicKey: Base64.encode(invitation.publicKey.rawRepresentation),
                                   trustedAt: now(), lastConnectedAt: now())
        try store.trust(device)
        return device
    }

    /// Proves to an already trusted device that this is us, and checks that it is it.
    public func authenticate(over channel: any TrustChannel) async throws -> TrustedDevice {
        let nonceA = Self.nonce()
        var hello = TrustMessage(type: TrustMessage.hello)
        hello.device_id = identity.deviceId
        hello.nonce = nonceA
        try await channel.send(hello)
        let challenge = try await channel.receive()
        try Self.expect(challenge, TrustMessage.challenge)
        guard let peerId = challenge.device_id, let nonceB = Self.validNonce(challenge.nonce) else { throw TrustError.protocolError }
        guard let peer = try store.device(id: peerId), let key = peer.key else { throw TrustError.unknownDevice }
        let parts = [identity.deviceId, peerId, nonceA, nonceB]
        guard Self.verify(challenge.signature, Self.transcript("auth", role: "listener", parts), key: key) else { throw TrustError.badSignature }
        var proof = TrustMessage(type: TrustMessage.proof)
        proof.signature = Base64.encode(try identity.sign(Self.transcript("auth", role: "connector", parts)))
        try await channel.send(proof)
        try Self.expect(try await channel.receive(), TrustMessage.welcome)
        try store.touch(deviceId: peerId, at: now())
        return peer
    }

    // MARK: Inviter and listener

    /// What a served session did.
    public enum Outcome: Sendable, Equatable {
        case paired(TrustedDevice)
        case authenticated(TrustedDevice)
    }

    /// Answers one session from another device: a pairing with an invitation issued here, or
    /// an authentication by a trusted device. Refusals are sent to the peer and thrown here.
    public func serve(over channel: any TrustChannel) async throws -> Outcome {
        let first = try await channel.receive()
        do {
            switch first.type {
            case TrustMessage.pair: return .paired(try await acceptPairing(first, over: channel))
            case TrustMessage.hello: return .authenticated(try await answerHello(first, over: channel))
            default: throw TrustError.protocolError
            }
        } catch let error as TrustError {
            var refusal = TrustMessage(type: TrustMessage.refused)
            refusal.reason = error.code
            try? await channel.send(refusal)
            throw error
        }
    }

    private func acceptPairing(_ request: TrustMessage, over channel: any TrustChannel) async throws -> TrustedDevice {
        guard let invitationId = request.invitation_id, let secretText = request.secret, let secret = Base64.decode(secretText),
              let peerId = request.device_id, !peerId.isEmpty, peerId.utf8.count <= 64, peerId != identity.deviceId,
              let keyText = request.key, let keyBytes = Base64.decode(keyText), let key = try? Curve25519.Signing.PublicKey(rawRepresentation: keyBytes),
              let nonceA = Self.validNonce(request.nonce) else { throw TrustError.protocolError }
        try store.consume(invitationId: invitationId, secret: Array(secret), now: now())
        try await challenge(purpose: "pair", roles: ("inviter", "acceptor"), key: key, over: channel) { nonceB in
            [invitationId, identity.deviceId, peerId, keyText, nonceA, nonceB]
        }
        let device = TrustedDevice(deviceId: peerId, name: String((request.name ?? "").prefix(64)), publicKey: keyText, trustedAt: now(), lastConnectedAt: now())
        try store.trust(device)
        try await channel.send(TrustMessage(type: TrustMessage.welcome))
        return device
    }

    /// Sends our nonce signed into the transcript, and checks the peer's proof over the same
    /// transcript under its own role: the step both served sessions share.
    private func challenge(
        purpose: String, roles: (ours: String, theirs: String), key: Curve25519.Signing.PublicKey, over channel: any TrustChannel,
        parts: (String) -> [String]
    ) async throws {
        let nonce = Self.nonce()
        let transcriptParts = parts(nonce)
        var challenge = TrustMessage(type: TrustMessage.challenge)
        challenge.device_id = identity.deviceId
        challenge.name = identity.name
        challenge.nonce = nonce
        challenge.signature = Base64.encode(try identity.sign(Self.transcript(purpose, role: roles.ours, transcriptParts)))
        try await channel.send(challenge)
        let proof = try await channel.receive()
        try Self.expect(proof, TrustMessage.proof)
        guard Self.verify(proof.signature, Self.transcript(purpose, role: roles.theirs, transcriptParts), key: key) else { throw TrustError.badSignature }
    }

    private func answerHello(_ hello: TrustMessage, over channel: any TrustChannel) async throws -> TrustedDevice {
        guard let peerId = hello.device_id, let nonceA = Self.validNonce(hello.nonce) else { throw TrustError.protocolError }
        guard let peer = try store.device(id: peerId), let key = peer.key else { throw TrustError.unknownDevice }
        try await challenge(purpose: "auth", roles: ("listener", "connector"), key: key, over: channel) { nonceB in
            [peerId, identity.deviceId, nonceA, nonceB]
        }
        try store.touch(deviceId: peerId, at: now())
        try await channel.send(TrustMessage(type: TrustMessage.welcome))
        return peer
    }
}

/// A wall clock read from a closure of whole Unix seconds.
struct SecondsWallClock: WallClock {
    let seconds: @Sendable () -> Int64
    var now: Date { Date(timeIntervalSince1970: TimeInterval(seconds())) }
}
