import Foundation
import HTTPTypes
import KeylightCore
import KeylightSigning
@testable import KeylightServer
import Testing

/// Protocol section 3 on the server: every SDK response to a request with a nonce is signed.
@Suite(.timeLimit(.minutes(6))) struct SignedResponseTests {
    static let nonceName = HTTPField.Name("X-Keylight-Nonce")!

    func verify(_ reply: Reply, nonce: ResponseNonce, path: String, keyset: Keyset, now: Int64) throws(ResponseSignatureError) {
        try ResponseSignatureVerifier(keyset: keyset).verify(
            signature: reply.headers[.init("X-Keylight-Signature")!] ?? "",
            kid: reply.headers[.init("X-Keylight-Signature-Kid")!] ?? "",
            requestTime: reply.headers[.init("X-Keylight-Request-Time")!] ?? "",
            nonce: nonce.bytes, path: path, body: Array(reply.body), now: now
        )
    }

    @Test func successesAndErrorsAreSignedForTheirNonce() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed(limit: 1)
            let keyset = try await client.keyset()
            let now = harness.clock.unixSeconds
            let nonce = ResponseNonce()
            let activated = try await client.sdk("activate", ["license_key": seed.licenseKey, "instance_name": "Mac", "machine_hash": "m1"], seed: seed, headers: [Self.nonceName: nonce.header])
            #expect(activated.status == .ok)
            try verify(activated, nonce: nonce, path: "/acme/app/activate", keyset: keyset, now: now)
            #expect(activated.headers[.init("X-Keylight-Request-Time")!] == String(harness.clock.unixMilliseconds))
            #expect(activated.headers[.init("X-Keylight-Signature-Kid")!] == client.server.keyRing.current["acme"]!.active.kid)
            // Another nonce, path or body does not verify.
            #expect(throws: ResponseSignatureError.badMessageSignature) { try verify(activated, nonce: ResponseNonce(), path: "/acme/app/activate", keyset: keyset, now: now) }
            #expect(throws: ResponseSignatureError.badMessageSignature) { try verify(activated, nonce: nonce, path: "/acme/app/validate", keyset: keyset, now: now) }

            let errorNonce = ResponseNonce()
            let refused = try await client.sdk("activate", ["license_key": seed.licenseKey, "instance_name": "Mac", "machine_hash": "m2"], seed: seed, headers: [Self.nonceName: errorNonce.header])
            #expect(refused.status == .conflict)
            try verify(refused, nonce: errorNonce, path: "/acme/app/activate", keyset: keyset, now: now)
            for (action, body, method) in [("config", nil, HTTPRequest.Method.get), ("validate", "{}", .post), ("keyless", #"{"instance_id":"x","state":"trial"}"#, .post)] as [(String, String?, HTTPRequest.Method)] {
                let n = ResponseNonce()
                let reply = try await client.sdkRaw(action, body: body, seed: seed, method: method, headers: [Self.nonceName: n.header])
                try verify(reply, nonce: n, path: "/acme/app/\(action)", keyset: keyset, now: now)
            }
            let unauthorized = ResponseNonce()
            let wrongKey = try await client.sdkRaw("config", body: nil, seed: seed, sdkKey: "wrong", method: .get, headers: [Self.nonceName: unauthorized.header])
            #expect(wrongKey.status == .unauthorized)
            try verify(wrongKey, nonce: unauthorized, path: "/acme/app/config", keyset: keyset, now: now)
        }
    }

    /// Answers made before the action runs are SDK answers too: the per-address 429 and the 413
    /// of an oversized body are signed and carry the action's outcome field.
    @Test func rateLimitedAndOversizedAnswersAreSignedToo() async throws {
        var limits = ServerLimits.unlimited
        // Enough for seeding (admin calls count too), none refilled while the test runs.
        limits.perAddress = RateLimit(perMinute: 1, burst: 12)
        let harness = Harness(limits: limits)
        try await harness.run { client in
            let seed = try await client.seed()
            let keyset = try await client.keyset()
            let now = harness.clock.unixSeconds
            let big = ResponseNonce()
            let oversized = try await client.sdkRaw(
                "validate", body: #"{"license_key":""# + String(repeating: "A", count: 70_000) + #""}"#, seed: seed, method: .post, headers: [Self.nonceName: big.header]
            )
            #expect(oversized.status == .contentTooLarge && oversized["valid"] as? Bool == false)
            try verify(oversized, nonce: big, path: "/acme/app/validate", keyset: keyset, now: now)
            var limited: (Reply, ResponseNonce)?
            for _ in 0..<20 where limited == nil {
                let nonce = ResponseNonce()
                let reply = try await client.sdk("activate", ["license_key": seed.licenseKey, "instance_name": "Mac"], seed: seed, headers: [Self.nonceName: nonce.header])
                if reply.status == .tooManyRequests { limited = (reply, nonce) }
            }
            let (reply, nonce) = try #require(limited, "the per-address limit never answered 429")
            #expect(reply["activated"] as? Bool == false && reply.code == "RATE_LIMITED")
            try verify(reply, nonce: nonce, path: "/acme/app/activate", keyset: keyset, now: now)
        }
    }

    @Test func noNonceNoSignatureAndBadNoncesAre400() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let plain = try await client.sdkRaw("config", body: nil, seed: seed, method: .get)
            #expect(plain.headers[.init("X-Keylight-Signature")!] == nil)
            for bad in ["", "short", Base64.encode([UInt8](repeating: 1, count: 11)), Base64.encode([UInt8](repeating: 1, count: 13)), "!!!!!!!!!!!!!!!!"] {
                let reply = try await client.sdk("validate", ["license_key": seed.licenseKey, "instance_id": "x"], seed: seed, headers: [Self.nonceName: bad])
                #expect(reply.status == .badRequest, "\(bad)")
                #expect(reply.code == "INVALID_REQUEST")
                #expect(reply["valid"] as? Bool == false)
                #expect(reply.headers[.init("X-Keylight-Signature")!] == nil)
            }
            // Admin and operational routes are not part of the SDK API: never signed.
            let health = try await client.request(.get, "/healthz", headers: [Self.nonceName: ResponseNonce().header])
            #expect(health.headers[.init("X-Keylight-Signature")!] == nil)
        }
    }

    @Test func intermediateKeysRotateDailyFollowTheRootAndAreShared() async throws {
        let path = try ConcurrencyTests.databaseFile()
        let clock = TestClock()
        try await Harness(databasePath: path, clock: clock).run { client in
            let seed = try await client.seed()
            // The tenant's key got its intermediate when the tenant was created.
            let first = try #require(try await client.database.responseSigningKey(rootKid: client.server.keyRing.current["acme"]!.active.kid, createdDay: keylightDay(clock.unixSeconds)))
            #expect(first.expiryDay == keylightDay(clock.unixSeconds) + 3)
            let nonce = ResponseNonce()
            let before = try await client.sdkRaw("config", body: nil, seed: seed, method: .get, headers: [Self.nonceName: nonce.header])
            let certificateBefore = Array(Base64.decode(before.headers[.init("X-Keylight-Signature")!]!)![0..<100])
            #expect(Base64.encode(certificateBefore) == first.certificate)

            // A day later the periodic refresh makes a new one (no restart).
            clock.advance(by: 86_400)
            try await client.server.signer.refresh()
            let n2 = ResponseNonce()
            let after = try await client.sdkRaw("config", body: nil, seed: Seed(sdkKey: try #require(try await client.database.setting("test_sdk_key")), keyType: "", licenseKey: "", licenseId: ""), method: .get, headers: [Self.nonceName: n2.header])
            let certificateAfter = Array(Base64.decode(after.headers[.init("X-Keylight-Signature")!]!)![0..<100])
            #expect(certificateAfter != certificateBefore)
            try verify(after, nonce: n2, path: "/acme/app/config", keyset: try await client.keyset(), now: clock.unixSeconds)

            // A root rotation moves responses to an intermediate certified by the new root.
            let rotated = try await client.admin(.post, "/signing-keys/rotate")
            let n3 = ResponseNonce()
            let third = try await client.sdkRaw("config", body: nil, seed: Seed(sdkKey: try #require(try await client.database.setting("test_sdk_key")), keyType: "", licenseKey: "", licenseId: ""), method: .get, headers: [Self.nonceName: n3.header])
            #expect(third.headers[.init("X-Keylight-Signature-Kid")!] == rotated["kid"] as? String)
            try verify(third, nonce: n3, path: "/acme/app/config", keyset: try await client.keyset(), now: clock.unixSeconds)
        }
        // A second server on the same database (a restart, or another process) uses the stored key.
        try await Harness(databasePath: path, clock: clock).run { client in
            let n = ResponseNonce()
            let reply = try await client.sdkRaw("config", body: nil, seed: Seed(sdkKey: try #require(try await client.database.setting("test_sdk_key")), keyType: "", licenseKey: "", licenseId: ""), method: .get, headers: [Self.nonceName: n.header])
            let stored = try #require(try await client.database.responseSigningKey(rootKid: client.server.keyRing.current["acme"]!.active.kid, createdDay: keylightDay(clock.unixSeconds)))
            #expect(Base64.encode(Array(Base64.decode(reply.headers[.init("X-Keylight-Signature")!]!)![0..<100])) == stored.certificate)
        }
    }
}
