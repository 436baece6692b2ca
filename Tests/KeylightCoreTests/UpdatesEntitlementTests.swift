import Crypto
import Foundation
import KeylightTestSupport
import KeylightCore
import KeylightSigning
import Testing

/// The "updates until" date rides in a v3 lease as an entitlement code. These tests show that a
/// client written only from protocol section 1 (as older SDKs and the hosted service's clients
/// are) still verifies such leases: first it must agree with every shared vector, then it must
/// accept leases carrying the code, and refuse them when the date is changed.
@Suite(.enabled(if: PrerequisiteGate.enabled(Shared.hasLeaseVectors), "../shared is absent"), .timeLimit(.minutes(3)))
struct UpdatesEntitlementTests {
    /// A v3 verifier written from the protocol text alone, sharing no code with KeylightCore.
    enum OldClient {
        static func payload(_ lease: [String: Any]) -> Data? {
            guard let kid = lease["kid"] as? String, let hash = lease["licenseKeyHash"] as? String, let instance = lease["instanceId"] as? String,
                  let issued = lease["issuedAt"] as? Int64, let expires = lease["expiresAt"] as? Int64, let status = lease["status"] as? String,
                  let entitlements = lease["entitlements"] as? [String] else { return nil }
            let csv = entitlements.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }.joined(separator: ",")
            return Data("v3|\(kid)|\(hash)|\(instance)|\(issued)|\(expires)|\(status)|\(csv)".utf8)
        }

        static func signature(_ text: String) -> Data? {
            var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while base64.count % 4 != 0 { base64 += "=" }
            return Data(base64Encoded: base64)
        }

        /// (kidKnown, signatureValid, expired), as section 1 defines them.
        static func verify(_ lease: [String: Any], keys: [String: String], now: Int64) -> (Bool, Bool, Bool) {
            let expired = (lease["expiresAt"] as? Int64).map { now > $0 + 300 } ?? true
            guard let kid = lease["kid"] as? String, let keyText = keys[kid], let keyBytes = Data(base64Encoded: keyText),
                  let key = try? Curve25519.Signing.PublicKey(rawRepresentation: keyBytes) else { return (false, false, expired) }
            guard let payload = payload(lease), let signature = (lease["signature"] as? String).flatMap(signature) else { return (true, false, expired) }
            return (true, key.isValidSignature(signature, for: payload), expired)
        }

        static func json(_ lease: Lease) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(lease)) as? [String: Any])
        }
    }

    @Test func theOldClientAgreesWithEverySharedVector() throws {
        let data = try Data(contentsOf: Shared.leaseVectors)
        let file = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let vectors = try #require(file["vectors"] as? [[String: Any]])
        #expect(vectors.count == 8)
        for vector in vectors {
            let lease = try #require(vector["lease"] as? [String: Any])
            let keys = try #require(vector["trustedKeys"] as? [String: String])
            let now = try #require(vector["now"] as? Int64)
            let expect = try #require(vector["expect"] as? [String: Bool])
            let (kidKnown, signatureValid, expired) = OldClient.verify(lease, keys: keys, now: now)
            #expect(kidKnown == expect["kidKnown"] && expired == expect["expired"], "\(vector["name"] ?? "")")
            if kidKnown { #expect(signatureValid == expect["signatureValid"], "\(vector["name"] ?? "")") }
        }
    }

    @Test func theOldClientVerifiesLeasesCarryingTheDateAndNoticesAChangedDate() throws {
        let key = try SigningKey.generate(kid: "k1")
        let keys = ["k1": Base64.encode(Array(key.publicKey.rawRepresentation))]
        let code = UpdatesEntitlement.code(until: 1_795_305_600)
        // "u" and "v" sort either side of the code by code unit; the signer sorts, the old client sorts.
        let lease = try Lease.sign(licenseKeyHash: String(repeating: "a", count: 64), instanceId: "00000000-0000-4000-8000-000000000001",
                                   issuedAt: 1_781_076_246, expiresAt: 1_781_681_046, status: .active, entitlements: ["v", code, "pro", "u"], with: key)
        #expect(lease.entitlements == ["pro", "u", code, "v"])
        var json = try OldClient.json(lease)
        let (kidKnown, signatureValid, expired) = OldClient.verify(json, keys: keys, now: 1_781_076_256)
        #expect(kidKnown && signatureValid && !expired)
        // To an old client the code is one more entitlement it never asks about: "pro" is still granted.
        #expect((json["entitlements"] as? [String])?.contains("pro") == true)

        json["entitlements"] = ["pro", "u", UpdatesEntitlement.code(until: 1_895_305_600), "v"]
        #expect(OldClient.verify(json, keys: keys, now: 1_781_076_256).1 == false)
        var changed = lease
        changed.entitlements = ["pro", "u", UpdatesEntitlement.code(until: 1_895_305_600), "v"]
        #expect(!changed.verify(with: Keyset(["k1": key.publicKey]), now: 1_781_076_256).signatureValid)
    }

    @Test func oneDateHasOneSpelling() {
        #expect(UpdatesEntitlement.code(until: 1_795_305_600) == "updates-until:1795305600")
        #expect(UpdatesEntitlement.code(until: -5) == "updates-until:0")
        #expect(UpdatesEntitlement.date(in: "updates-until:1795305600") == 1_795_305_600)
        #expect(UpdatesEntitlement.date(in: "updates-until:0") == 0)
        for bad in ["updates-until:", "updates-until:01", "updates-until:+1", "updates-until:-1", "updates-until:1e9", "updates-until:1 ",
                    "updates-until:99999999999999", "updates-until:1099511627777", "Updates-until:1", "pro", "updates-until:١٢"] {
            #expect(UpdatesEntitlement.date(in: bad) == nil, "\(bad)")
        }
        #expect(UpdatesEntitlement.date(in: "updates-until:1099511627776") == 1 << 40)
        #expect(UpdatesEntitlement.date(in: ["pro", "updates-until:20", "updates-until:10"]) == 10)
        #expect(UpdatesEntitlement.removing(from: ["pro", "updates-until:20", "sync"]) == ["pro", "sync"])
    }
}
