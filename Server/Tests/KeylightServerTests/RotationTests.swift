import Foundation
import KeylightCore
import KeylightSigning
@testable import KeylightServer
import Testing

@Suite(.timeLimit(.minutes(6))) struct RotationTests {
    /// Protocol 6.2 in the order seed 000 asks for: prepare (published as next, signs nothing),
    /// rotate (the prepared key signs, the old one stays as grace), retire (never the signing key).
    @Test func stagedRotationPerTenant() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed()
            let instance = try #require(try await client.activate(seed)["instance_id"] as? String)
            let old = try #require(try await client.validate(seed, instance: instance).lease)
            let tenantKeys = "/tenants/acme/signing-keys"

            let prepared = try await client.admin(.post, tenantKeys + "/prepare")
            #expect(prepared.status == .created && prepared["status"] as? String == "next")
            let next = try #require(prepared["kid"] as? String)
            let preparedKey = try #require(prepared["public_key"] as? String)
            #expect(next != old.kid && Base64.decode(preparedKey)?.count == 32)
            #expect(try await client.admin(.post, tenantKeys + "/prepare")["kid"] as? String == next)  // idempotent
            // Published as next, signing nothing yet.
            let published = try await client.request(.get, "/acme/.well-known/keylight-keys")
            #expect(published.status == .ok && published["primary_kid"] as? String == old.kid)
            #expect(Self.statuses(published) == [old.kid: "active", next: "next"])
            #expect(((published["keys"] as? [[String: Any]]) ?? []).allSatisfy { $0["alg"] as? String == "ed25519" })
            #expect(try #require(try await client.validate(seed, instance: instance).lease).kid == old.kid)
            // The first revision's document lists what signs or signed, not what will.
            #expect(Self.statuses(try await client.request(.get, "/.well-known/keylight-keys.json")) == [old.kid: "active"])
            #expect(try await client.admin(.post, tenantKeys + "/\(next)/retire").status == .ok)  // a prepared key may be abandoned
            let replacement = try #require(try await client.admin(.post, tenantKeys + "/prepare")["kid"] as? String)
            #expect(replacement != next)

            let rotated = try await client.admin(.post, tenantKeys + "/rotate")
            #expect(rotated.status == .created && rotated["kid"] as? String == replacement)
            let fresh = try #require(try await client.validate(seed, instance: instance).lease)
            #expect(fresh.kid == replacement)
            let after = try await client.request(.get, "/acme/.well-known/keylight-keys")
            #expect(after["primary_kid"] as? String == replacement)
            #expect(Self.statuses(after) == [old.kid: "grace", replacement: "active"])
            let listed = try await client.admin(.get, tenantKeys)
            #expect(Self.statuses(listed) == [old.kid: "grace", next: "retired", replacement: "active"])

            let refused = try await client.admin(.post, tenantKeys + "/\(replacement)/retire")
            #expect(refused.status == .conflict && refused.code == "CONFLICT")
            #expect(try await client.admin(.post, tenantKeys + "/\(old.kid)/retire").status == .ok)
            let retired = try await client.keyset()
            #expect(retired[old.kid] == nil && fresh.verify(with: retired, now: harness.clock.unixSeconds).isCurrent)
            #expect(try await client.admin(.post, tenantKeys + "/knope/retire").status == .notFound)
            #expect(try await client.admin(.post, "/tenants/nobody/signing-keys/prepare").status == .notFound)
            #expect(try await client.request(.get, "/nobody/.well-known/keylight-keys").status == .notFound)

            let audit = try await client.admin(.get, "/audit-log")
            let actions = ((audit["entries"] as? [[String: Any]]) ?? []).compactMap { $0["action"] as? String }
            #expect(actions.contains("signing_key.prepare") && actions.contains("signing_key.rotate") && actions.contains("signing_key.retire"))
        }
    }

    /// Each tenant signs with its own key; one tenant's rotation leaves another's leases alone.
    @Test func oneTenantsRotationNeverTouchesAnother() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed()
            _ = try await client.admin(.post, "/tenants", ["id": "beta", "name": "Beta"])
            let acmeKid = try #require(client.server.keyRing.current["acme"]?.active.kid)
            let betaKid = try #require(client.server.keyRing.current["beta"]?.active.kid)
            #expect(acmeKid != betaKid)
            _ = try await client.admin(.post, "/tenants/beta/signing-keys/rotate")
            #expect(client.server.keyRing.current["acme"]?.active.kid == acmeKid)
            let instance = try #require(try await client.activate(seed)["instance_id"] as? String)
            #expect(try await client.validate(seed, instance: instance).lease?.kid == acmeKid)
            let betaKeys = try await client.request(.get, "/beta/.well-known/keylight-keys")
            #expect(Self.statuses(betaKeys)[acmeKid] == nil)
            // Config and response signatures follow the tenant's key too.
            let config = try await client.request(.get, "/acme/app/config", headers: [.init("X-Keylight-SDK-Key")!: seed.sdkKey])
            #expect(config["kid"] as? String == acmeKid)
        }
    }

    /// The server-wide routes act on every tenant at once.
    @Test func serverWideRotationAndRetirement() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            _ = try await client.admin(.post, "/tenants", ["id": "beta", "name": "Beta"])
            let prepared = try #require(try await client.admin(.post, "/tenants/beta/signing-keys/prepare")["kid"] as? String)
            let before = try #require(client.server.keyRing.current["acme"]?.active.kid)
            _ = try await client.admin(.post, "/tenants", ["id": "gamma", "name": "Gamma"])
            let rotated = try await client.admin(.post, "/signing-keys/rotate")
            #expect(rotated.status == .created)
            let fresh = try #require(rotated["kid"] as? String)
            let tenants = Dictionary(uniqueKeysWithValues: ((rotated["tenants"] as? [[String: Any]]) ?? []).map { ($0["tenant_id"] as! String, $0["kid"] as! String) })
            #expect(tenants["acme"] == fresh && tenants["beta"] == prepared)  // kid and public_key: the first tenant's
            // Tenants without a prepared key each get a key of their own: one tenant's leases never verify in another's app.
            #expect(tenants["gamma"] != nil && tenants["gamma"] != fresh && tenants["gamma"] != prepared)
            #expect(client.server.keyRing.current["acme"]?.active.kid == fresh && client.server.keyRing.current["beta"]?.active.kid == prepared)
            #expect(client.server.keyRing.current["gamma"]?.active.kid == tenants["gamma"])
            #expect(try await client.admin(.post, "/signing-keys/\(fresh)/retire").status == .conflict)
            #expect(try await client.admin(.post, "/signing-keys/\(before)/retire").status == .ok)
            let listed = ((try await client.admin(.get, "/signing-keys")["keys"] as? [[String: Any]]) ?? [])
            #expect(listed.contains { $0["kid"] as? String == before && $0["status"] as? String == "retired" && $0["tenant_id"] as? String == "acme" })
        }
    }

    /// An upgraded database: every tenant keeps the server key it signed with, so shipped apps keep verifying.
    @Test(arguments: StorageBackend.available)
    func upgradeGivesEveryTenantTheServerKey(backend: StorageBackend) async throws {
        let before = Array(Migration.all.prefix { $0.name != Migration.tenantSigningKeys.name })
        let db = try await backend.open(migrations: before)
        let sealer = SecretSealer.ephemeral()
        let server = try SigningKey.generate()
        let old = try SigningKey.generate()
        for (key, status) in [(old, "grace"), (server, "active")] {
            let sealed = try sealer.seal(key.privateKey.rawRepresentation, context: KeyRing.sealContext(key.kid))
            try await db.sql.raw("""
                INSERT INTO signing_keys (kid, public_key, sealed_private_key, status, created_at, status_changed_at)
                VALUES (\(bind: key.kid), \(bind: Base64.encode(key.publicKey.rawRepresentation)), \(bind: sealed), \(bind: status), 1, 1)
                """).run()
        }
        for tenant in ["acme", "beta"] {
            try await db.sql.raw("INSERT INTO tenants (id, name, created_at) VALUES (\(bind: tenant), \(bind: tenant), 1)").run()
        }
        #expect(try await db.migrate(logger: Harness.logger) == Migration.all.dropFirst(before.count).map(\.name))
        let ring = KeyRing(database: db, sealer: sealer, clock: TestClock(), logger: Harness.logger)
        try await ring.loadCreatingIfNeeded()
        for tenant in ["acme", "beta"] {
            let keys = try #require(ring.current[tenant])
            #expect(keys.active.kid == server.kid && keys.active.publicKey.rawRepresentation == server.publicKey.rawRepresentation)
            #expect(keys.keyset[old.kid] != nil)
        }
        await db.close()
    }

    @Test func privateKeysAreSealedInTheDatabase() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            let active = try #require(client.server.keyRing.current["acme"]?.active)
            let raw = Base64.encode(active.privateKey.rawRepresentation)
            let stored = try #require(try await client.database.sql.raw("SELECT sealed_private_key FROM tenant_signing_keys WHERE tenant_id = 'acme'")
                .first(decodingColumn: "sealed_private_key", as: String.self))
            #expect(!stored.contains(raw))
            #expect(stored.count > raw.count)  // nonce + ciphertext + tag
        }
    }

    static func statuses(_ reply: Reply) -> [String: String] {
        Dictionary(uniqueKeysWithValues: ((reply["keys"] as? [[String: Any]]) ?? []).map { ($0["kid"] as! String, $0["status"] as! String) })
    }
}
