import Foundation
@testable import KeylightCore
import KeylightSigning
import Testing

@Suite(.timeLimit(.minutes(3))) struct ProductConfigTests {
    static let config = ProductConfig(
        tenantId: "acme", productId: "app", trialDurationDays: 14, freeTierEnabled: true,
        issuedAt: 1_700_000_000, expiresAt: 1_700_086_400
    )
    static let key = LeaseTests.fixedKey
    static let keyset = Keyset(["kt": key.publicKey])
    /// Made with Python's `cryptography` over the cfg1 payload below with the same seed key.
    static let pythonSignature = "g9yBl1fNUysPdklX98HwVSpkPYN1vZTFfuU4esoucR5aUIRGgAEdvk9xCt0ZtXkOnGGl8eLjfMAjN0b23ncUCw=="

    @Test func payloadIsTheDocumentedString() {
        #expect(String(decoding: Self.config.signedPayload(kid: "kt"), as: UTF8.self) == "cfg1|kt|acme|app|1700000000|1700086400|14|true")
        var off = Self.config
        off.freeTierEnabled = false
        #expect(String(decoding: off.signedPayload(kid: "kt"), as: UTF8.self).hasSuffix("|14|false"))
    }

    @Test func signedConfigVerifiesForItsProductOnly() {
        let signed = Self.config.signed(with: Self.key)
        #expect(signed.verify(tenantId: "acme", productId: "app", with: Self.keyset, now: 1_700_000_100).isCurrent)
        #expect(!signed.verify(tenantId: "acme", productId: "other", with: Self.keyset, now: 1_700_000_100).signatureValid)
        #expect(!signed.verify(tenantId: "evil", productId: "app", with: Self.keyset, now: 1_700_000_100).signatureValid)
    }

    @Test func signatureFromAnotherImplementationVerifies() {
        var signed = Self.config.signed(with: Self.key)
        signed.signature = Self.pythonSignature
        #expect(signed.verify(tenantId: "acme", productId: "app", with: Self.keyset, now: 1_700_000_100).isCurrent)
    }

    @Test func tamperedValuesFail() {
        let signed = Self.config.signed(with: Self.key)
        let edits: [(inout SignedProductConfig) -> Void] = [
            { $0.trialDurationDays = 365 }, { $0.freeTierEnabled = false }, { $0.expiresAt += 1 }, { $0.issuedAt -= 1 },
        ]
        for edit in edits {
            var copy = signed
            edit(&copy)
            #expect(!copy.verify(tenantId: "acme", productId: "app", with: Self.keyset, now: 1_700_000_100).signatureValid)
        }
    }

    @Test func expiryAndUnknownKid() {
        let signed = Self.config.signed(with: Self.key)
        #expect(signed.verify(tenantId: "acme", productId: "app", with: Self.keyset, now: 1_700_086_701).expired)
        #expect(!signed.verify(tenantId: "acme", productId: "app", with: Self.keyset, now: 1_700_086_700).expired)
        #expect(!signed.verify(tenantId: "acme", productId: "app", with: Keyset(), now: 1_700_000_100).kidKnown)
    }

    @Test func wireFormatIsSnakeCase() throws {
        let json = try JSONEncoder().encode(Self.config.signed(with: Self.key))
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(Set(object.keys) == ["trial_duration_days", "free_tier_enabled", "issued_at", "expires_at", "kid", "signature"])
        #expect(try JSONDecoder().decode(SignedProductConfig.self, from: json) == Self.config.signed(with: Self.key))
    }
}
