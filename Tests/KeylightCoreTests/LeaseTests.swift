import Crypto
import Foundation
@testable import KeylightCore
import KeylightSigning
import Testing

@Suite(.timeLimit(.minutes(3))) struct LeaseTests {
    static let hash = String(repeating: "a", count: 64)
    static let instance = "00000000-0000-4000-8000-000000000001"
    /// Seed 0x00..0x1F; public key and signatures below were made independently with Python's
    /// `cryptography` package, so these tests check interoperability, not just self-consistency.
    static let fixedKey = try! SigningKey(kid: "kt", privateKey: .init(rawRepresentation: Array(0..<32) as [UInt8]))
    static let fixedPublicBase64 = "A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg="
    static let pythonSignature = "agCyUhETSs35J/aWIzT5Rg6dpnzO0q138MVSlSVf7igGZQid9xXnRCpmjHC1DU4VwGpx6n6ZHrWXDeBEJW1GDg=="

    static func keyset(_ keys: SigningKey...) -> Keyset {
        Keyset(Dictionary(uniqueKeysWithValues: keys.map { ($0.kid, $0.publicKey) }))
    }

    static func sample(status: Lease.Status = .active, entitlements: [String] = ["pro", "beta"], key: SigningKey = fixedKey) throws -> Lease {
        try Lease.sign(
            licenseKeyHash: hash, instanceId: instance, issuedAt: 1_700_000_000, expiresAt: 1_700_604_800,
            status: status, entitlements: entitlements, with: key
        )
    }

    @Test func payloadIsTheDocumentedStringWithSortedEntitlements() throws {
        let lease = try Self.sample()
        let expected = "v3|kt|\(Self.hash)|\(Self.instance)|1700000000|1700604800|active|beta,pro"
        #expect(String(decoding: lease.signedPayload, as: UTF8.self) == expected)
        #expect(lease.entitlements == ["beta", "pro"])
    }

    @Test func payloadWithNoEntitlementsEndsInAnEmptyField() throws {
        let lease = try Self.sample(status: .fallback, entitlements: [])
        #expect(String(decoding: lease.signedPayload, as: UTF8.self).hasSuffix("|fallback|"))
    }

    @Test func sortingIsByCodeUnitNotLocale() {
        #expect(Lease.canonicalOrder(["b", "B", "a", "A", "_", "10", "9"]) == ["10", "9", "A", "B", "_", "a", "b"])
    }

    @Test func negativeAndExtremeTimesUseStringDecimalForm() {
        var bytes: [UInt8] = []
        for value in [Int64.min, -1, 0, 7, 1_781_076_246, Int64.max] {
            bytes.removeAll()
            bytes.appendDecimal(value)
            #expect(String(decoding: bytes, as: UTF8.self) == String(value))
        }
    }

    @Test func fixedKeyMatchesTheIndependentImplementation() {
        #expect(Base64.encode(Self.fixedKey.publicKey.rawRepresentation) == Self.fixedPublicBase64)
    }

    @Test func signatureFromAnotherImplementationVerifies() throws {
        var lease = try Self.sample()
        lease.signature = Self.pythonSignature
        #expect(lease.verify(with: Self.keyset(Self.fixedKey), now: 1_700_000_100) == .init(kidKnown: true, signatureValid: true, expired: false))
    }

    @Test func signedLeaseVerifies() throws {
        let key = try SigningKey.generate(kid: "k1")
        let lease = try Self.sample(key: key)
        let result = lease.verify(with: Self.keyset(key), now: 1_700_000_100)
        #expect(result.isCurrent)
        #expect(lease.kid == "k1")
    }

    @Test func everySignedFieldIsCovered() throws {
        let lease = try Self.sample()
        let keyset = Self.keyset(Self.fixedKey)
        let tampered: [(String, (inout Lease) -> Void)] = [
            ("licenseKeyHash", { $0.licenseKeyHash = String(repeating: "b", count: 64) }),
            ("instanceId", { $0.instanceId = "00000000-0000-4000-8000-000000000002" }),
            ("issuedAt", { $0.issuedAt += 1 }),
            ("expiresAt", { $0.expiresAt += 86_400 }),
            ("status", { $0.status = .fallback }),
            ("entitlements added", { $0.entitlements.append("admin") }),
            ("entitlements removed", { $0.entitlements.removeLast() }),
            ("signature byte", { lease in
                var raw = Array(Base64.decode(lease.signature)!)
                raw[10] ^= 0x01
                lease.signature = Base64.encode(raw)
            }),
        ]
        for (name, mutate) in tampered {
            var copy = lease
            mutate(&copy)
            let result = copy.verify(with: keyset, now: 1_700_000_100)
            #expect(result.kidKnown && !result.signatureValid, "\(name) tampering must invalidate the signature")
        }
    }

    @Test func entitlementOrderDoesNotMatterToVerification() throws {
        var lease = try Self.sample()
        lease.entitlements.reverse()
        #expect(lease.verify(with: Self.keyset(Self.fixedKey), now: 1_700_000_100).signatureValid)
    }

    @Test func kidSwapToAnotherTrustedKeyFails() throws {
        let other = try SigningKey.generate(kid: "k2")
        var lease = try Self.sample()
        lease.kid = "k2"
        let result = lease.verify(with: Self.keyset(Self.fixedKey, other), now: 1_700_000_100)
        #expect(result.kidKnown && !result.signatureValid)
    }

    @Test func unknownKidIsNeverValid() throws {
        let lease = try Self.sample()
        let result = lease.verify(with: Keyset(), now: 1_700_000_100)
        #expect(result == .init(kidKnown: false, signatureValid: false, expired: false))
        #expect(!result.isTrusted)
    }

    @Test func expiryUsesThreeHundredSecondsOfSkew() throws {
        let lease = try Self.sample()
        let keyset = Self.keyset(Self.fixedKey)
        #expect(!lease.verify(with: keyset, now: lease.expiresAt + 300).expired)
        #expect(lease.verify(with: keyset, now: lease.expiresAt + 301).expired)
        #expect(!lease.verify(with: keyset, now: lease.expiresAt + 301).isCurrent)
    }

    @Test func farFutureExpiryDoesNotOverflow() throws {
        var lease = try Self.sample()
        lease.expiresAt = .max
        #expect(!lease.verify(with: Self.keyset(Self.fixedKey), now: .max).expired)
    }

    @Test(arguments: ["", "!!!!", "c2hvcnQ=", String(repeating: "A", count: 200)])
    func undecodableOrShortSignaturesAreInvalidNotErrors(signature: String) throws {
        var lease = try Self.sample()
        lease.signature = signature
        let result = lease.verify(with: Self.keyset(Self.fixedKey), now: 1_700_000_100)
        #expect(result.kidKnown && !result.signatureValid)
    }

    @Test func ambiguousFieldsAreRefusedWhenSigning() throws {
        for entitlements in [["a,b"], ["pro|x"], [""]] {
            #expect(throws: LeaseError.ambiguousField) { try Self.sample(entitlements: entitlements) }
        }
        #expect(throws: LeaseError.ambiguousField) {
            try Lease.sign(licenseKeyHash: Self.hash, instanceId: "a|b", issuedAt: 1, expiresAt: 2, status: .active, entitlements: [], with: Self.fixedKey)
        }
    }

    @Test func splittingASignedEntitlementDoesNotVerify() throws {
        // ["a","b"] and ["a,b"] would share a payload; a verifier must not accept the rewrite.
        var lease = try Self.sample(entitlements: ["a", "b"])
        lease.entitlements = ["a,b"]
        #expect(!lease.verify(with: Self.keyset(Self.fixedKey), now: 1_700_000_100).signatureValid)
    }

    @Test func nonActiveLeasesCarryNoEntitlements() throws {
        #expect(throws: LeaseError.entitlementsWithoutActive) { try Self.sample(status: .fallback, entitlements: ["pro"]) }
        #expect(throws: LeaseError.entitlementsWithoutActive) { try Self.sample(status: .expired, entitlements: ["pro"]) }
        #expect(throws: LeaseError.expiresBeforeIssued) {
            try Lease.sign(licenseKeyHash: Self.hash, instanceId: "i", issuedAt: 10, expiresAt: 9, status: .active, entitlements: [], with: Self.fixedKey)
        }
    }

    @Test func jsonHasExactlyTheProtocolFields() throws {
        let lease = try Self.sample()
        let object = try #require(try JSONSerialization.jsonObject(with: lease.json()) as? [String: Any])
        #expect(Set(object.keys) == ["kid", "licenseKeyHash", "instanceId", "issuedAt", "expiresAt", "status", "signature", "entitlements"])
        #expect(object["issuedAt"] as? Int == 1_700_000_000)
        #expect(try Lease(json: lease.json()) == lease)
    }

    @Test(arguments: [
        #"{}"#,
        #"[]"#,
        #"{"kid":"k1"}"#,
        #"{"kid":"k1","licenseKeyHash":"a","instanceId":"i","issuedAt":1,"expiresAt":2,"status":"bogus","signature":"","entitlements":[]}"#,
        #"{"kid":"k1","licenseKeyHash":"a","instanceId":"i","issuedAt":"1","expiresAt":2,"status":"active","signature":"","entitlements":[]}"#,
        "not json",
    ])
    func malformedJSONIsALeaseError(json: String) {
        #expect(throws: LeaseError.malformed) { try Lease(json: Data(json.utf8)) }
    }
}
