import Crypto
import Foundation
@testable import KeylightCore
import KeylightSigning
import KeylightTestSupport
import Testing

/// Mutates well-formed inputs at random and feeds them to every parser of untrusted bytes in
/// KeylightCore. A parser that traps ends the test process (the seed, printed first, replays it
/// with `KEYLIGHT_FUZZ_SEED`); one that hangs fails the suite's time limit. Each call must also
/// answer, not loop: the assertions check that what is accepted is consistent.
@Suite(.timeLimit(.minutes(2))) struct ParserFuzzTests {
    static let iterations = 3_000

    static let key = try! SigningKey(kid: "k1", privateKey: Curve25519.Signing.PrivateKey())
    static var keyset: Keyset { Keyset(["k1": key.publicKey]) }

    @Test func licenseKeys() throws {
        var fuzzer = Mutator(seed: Mutator.seed("license keys"))
        let samples = try (0..<4).map { _ in try LicenseKey.generate(prefix: "ACME").text } + ["ACME-0000-0000-0000-0000"]
        for _ in 0..<Self.iterations {
            let text = fuzzer.mutate(text: fuzzer.pick(samples))
            if let key = try? LicenseKey(text) {
                // Whatever is accepted normalises to itself.
                #expect((try? LicenseKey(key.text))?.text == key.text, "seed \(fuzzer.seed): \(text)")
            }
        }
    }

    @Test func leasesAndConfigs() throws {
        var fuzzer = Mutator(seed: Mutator.seed("leases and configs"))
        let lease = try Lease.sign(
            licenseKeyHash: String(repeating: "a", count: 64), instanceId: "i-1",
            issuedAt: 1_700_000_000, expiresAt: 1_700_600_000, status: .active, entitlements: ["pro"], with: Self.key
        )
        let leaseJSON = String(decoding: lease.json(), as: UTF8.self)
        let config = ProductConfig(tenantId: "acme", productId: "app", trialDurationDays: 14, freeTierEnabled: true, issuedAt: 1, expiresAt: 2).signed(with: Self.key)
        let configJSON = String(decoding: try JSONEncoder().encode(config), as: UTF8.self)
        for _ in 0..<Self.iterations {
            let mutatedLease = fuzzer.mutate(text: leaseJSON)
            if let parsed = try? Lease(json: Data(mutatedLease.utf8)) {
                for now in fuzzer.extremes { _ = parsed.verify(with: Self.keyset, now: now) }
            }
            let mutatedConfig = fuzzer.mutate(text: configJSON)
            if let parsed = try? JSONDecoder().decode(SignedProductConfig.self, from: Data(mutatedConfig.utf8)) {
                for now in fuzzer.extremes { _ = parsed.verify(tenantId: "acme", productId: "app", with: Self.keyset, now: now) }
            }
            _ = try? Keyset(json: Data(fuzzer.mutate(text: #"{"keys":[{"kid":"k1","public_key":"\#(Base64.encode(Array(Self.key.publicKey.rawRepresentation)))","status":"active"}]}"#).utf8))
        }
        // The untouched inputs still verify: the mutations were applied to something valid.
        #expect(lease.verify(with: Self.keyset, now: 1_700_000_100).isCurrent)
    }

    @Test func responseSignatureHeaders() throws {
        var fuzzer = Mutator(seed: Mutator.seed("response signatures"))
        var random = SystemRandomNumberGenerator()
        let intermediate = IntermediateSigningKey.create(root: Self.key, expiryDay: 30_000)
        let nonce = ResponseNonce(using: &random)
        let body = Array(#"{"valid":true}"#.utf8)
        let signature = intermediate.sign(nonce: nonce.bytes, path: "/acme/app/validate", requestTime: "1700000000", body: body, using: &random)
        _ = signature.bytes
        let header = signature.header
        let verifier = ResponseSignatureVerifier(keyset: Self.keyset)
        try verifier.verify(signature: header, kid: "k1", requestTime: "1700000000", nonce: nonce.bytes, path: "/acme/app/validate", body: body, now: 1_700_000_000)
        for _ in 0..<Self.iterations {
            let mutated = fuzzer.mutate(text: header)
            _ = try? ResponseSignature(header: mutated)
            _ = ResponseNonce(header: fuzzer.mutate(text: nonce.header))
            let now = fuzzer.pick(fuzzer.extremes)
            let accepted = (try? verifier.verify(signature: mutated, kid: "k1", requestTime: fuzzer.mutate(text: "1700000000"), nonce: nonce.bytes, path: "/acme/app/validate", body: body, now: now)) != nil
            // A changed header that still verifies would be a forgery, unless it spells the same
            // signature (the decoder reads both base64 alphabets: `-` for `+`, `_` for `/`).
            if accepted { #expect((try? ResponseSignature(header: mutated))?.bytes == signature.bytes, "seed \(fuzzer.seed): forged \(mutated)") }
        }
    }

    @Test func webhookSignatureHeaders() {
        var fuzzer = Mutator(seed: Mutator.seed("webhook signatures"))
        let body = Array(#"{"id":"evt_1"}"#.utf8)
        let header = WebhookSignature.header(timestamp: 1_700_000_000, body: body, secret: "whsec")
        #expect(WebhookSignature.isValid(header: header, body: body, secret: "whsec", now: 1_700_000_000))
        for _ in 0..<Self.iterations {
            let mutated = fuzzer.mutate(text: header)
            for now in fuzzer.extremes {
                _ = WebhookSignature.isValid(header: mutated, body: body, secret: "whsec", now: now, tolerance: fuzzer.pick([0, 300, .max]))
            }
        }
    }
}
