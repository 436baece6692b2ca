import Foundation
import KeylightCore
@testable import KeylightServer
import Testing

@Suite struct RotationTests {
    @Test func rotationGraceAndRetirement() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed()
            let instance = try #require(try await client.activate(seed)["instance_id"] as? String)
            let old = try #require(try await client.validate(seed, instance: instance).lease)

            let rotated = try await client.admin(.post, "/signing-keys/rotate")
            #expect(rotated.status == .created)
            let newKid = try #require(rotated["kid"] as? String)
            #expect(newKid != old.kid)
            #expect(Base64.decode(try #require(rotated["public_key"] as? String))?.count == 32)

            let fresh = try #require(try await client.validate(seed, instance: instance).lease)
            #expect(fresh.kid == newKid)
            let keyset = try await client.keyset()
            let now = harness.clock.unixSeconds
            #expect(fresh.verify(with: keyset, now: now).isCurrent)
            // The old key is in grace: its leases still verify.
            #expect(old.verify(with: keyset, now: now).isCurrent)
            let document = try await client.request(.get, "/.well-known/keylight-keys.json")
            let statuses = Dictionary(uniqueKeysWithValues: ((document["keys"] as? [[String: Any]]) ?? []).map { ($0["kid"] as! String, $0["status"] as! String) })
            #expect(statuses == [old.kid: "grace", newKid: "active"])

            // The active key cannot be retired.
            let refused = try await client.admin(.post, "/signing-keys/\(newKid)/retire")
            #expect(refused.status == .conflict)
            let retired = try await client.admin(.post, "/signing-keys/\(old.kid)/retire")
            #expect(retired.status == .ok)
            let after = try await client.keyset()
            #expect(after[old.kid] == nil)
            #expect(!old.verify(with: after, now: now).kidKnown)
            #expect(fresh.verify(with: after, now: now).isCurrent)
            #expect(try await client.admin(.post, "/signing-keys/knope/retire").status == .notFound)

            let audit = try await client.admin(.get, "/audit-log")
            let actions = ((audit["entries"] as? [[String: Any]]) ?? []).compactMap { $0["action"] as? String }
            #expect(actions.contains("signing_key.rotate") && actions.contains("signing_key.retire"))
        }
    }

    @Test func privateKeysAreSealedInTheDatabase() async throws {
        try await Harness().run { client in
            let active = client.server.keyRing.current.active
            let raw = Base64.encode(active.privateKey.rawRepresentation)
            let stored = try #require(try await client.database.sql.raw("SELECT sealed_private_key FROM signing_keys")
                .first(decodingColumn: "sealed_private_key", as: String.self))
            #expect(!stored.contains(raw))
            #expect(stored.count > raw.count)  // nonce + ciphertext + tag
        }
    }
}
