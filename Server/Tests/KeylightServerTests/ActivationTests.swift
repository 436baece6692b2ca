import Foundation
import KeylightCore
@testable import KeylightServer
import Testing

@Suite(.timeLimit(.minutes(6))) struct ActivationTests {
    @Test func activationReturnsASignedLeaseThatVerifiesWithThePublicKeyset() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed(entitlements: ["sync", "pro"])
            let reply = try await client.activate(seed)
            #expect(reply.status == .ok, "\(reply.text)")
            #expect(reply["activated"] as? Bool == true)
            #expect(reply.json.keys.contains("license_expires_at") && reply["license_expires_at"] is NSNull)
            let instanceId = try #require(reply["instance_id"] as? String)
            let lease = try #require(reply.lease)
            let keyset = try await client.keyset()
            let now = harness.clock.unixSeconds
            #expect(lease.verify(with: keyset, now: now).isCurrent)
            #expect(lease.instanceId == instanceId)
            #expect(lease.licenseKeyHash == (try LicenseKey(seed.licenseKey).keyHash))
            #expect(lease.status == .active)
            #expect(lease.entitlements == ["pro", "sync"])
            #expect(lease.issuedAt == now && lease.expiresAt == now + 7 * 86_400)
            #expect(lease.kid == client.server.keyRing.current["acme"]!.active.kid)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE active") == 1)
        }
    }

    @Test func leaseRespectsTheKeyTypeTTLAndTheLicenseExpiry() async throws {
        let harness = Harness()
        try await harness.run { client in
            let now = harness.clock.unixSeconds
            let short = try await client.seed(ttl: 3_600)
            let lease = try #require(try await client.activate(short).lease)
            #expect(lease.expiresAt == now + 3_600)

            // A license that ends before the TTL caps the lease at its expiry.
            let ending = try await client.seed(ttl: 7 * 86_400, expiresAt: now + 86_400)
            let reply = try await client.activate(ending)
            #expect(reply["license_expires_at"] as? Int == Int(now + 86_400))
            #expect(reply.lease?.expiresAt == now + 86_400)
        }
    }

    @Test func keyTypeDurationSetsTheLicenseExpiry() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed(durationDays: 30)
            let reply = try await client.activate(seed)
            #expect(reply["license_expires_at"] as? Int == Int(harness.clock.unixSeconds + 30 * 86_400))
        }
    }

    @Test func reactivatingTheSameMachineOrInstanceUsesNoNewSlot() async throws {
        try await Harness().run { client in
            let seed = try await client.seed(limit: 1)
            let first = try await client.activate(seed, machine: "m-1")
            let again = try await client.activate(seed, machine: "m-1")
            #expect(again.status == .ok)
            #expect(again["instance_id"] as? String == first["instance_id"] as? String)
            // By instance id, without a machine hash.
            let byInstance = try await client.sdk("activate", [
                "license_key": seed.licenseKey, "instance_name": "Mac", "instance_id": first["instance_id"]!,
            ], seed: seed)
            #expect(byInstance["instance_id"] as? String == first["instance_id"] as? String)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances") == 1)
            #expect(try await client.count("SELECT active_instances AS n FROM licenses") == 1)
        }
    }

    @Test func theCapRefusesOneMoreAndDeactivationFreesTheSlot() async throws {
        try await Harness().run { client in
            let seed = try await client.seed(limit: 2)
            let a = try await client.activate(seed, machine: "m-a")
            _ = try await client.activate(seed, machine: "m-b")
            let c = try await client.activate(seed, machine: "m-c")
            #expect(c.status == .conflict)
            #expect(c.code == "ACTIVATION_LIMIT_REACHED")
            #expect(c["activated"] as? Bool == false)
            #expect(c["error"] is String)
            #expect(c.lease == nil)

            let instance = try #require(a["instance_id"] as? String)
            let off = try await client.sdk("deactivate", ["license_key": seed.licenseKey, "instance_id": instance], seed: seed)
            #expect(off.status == .ok && off["deactivated"] as? Bool == true)
            // Deactivating again is harmless and still frees nothing more.
            #expect(try await client.sdk("deactivate", ["license_key": seed.licenseKey, "instance_id": instance], seed: seed).status == .ok)
            #expect(try await client.count("SELECT active_instances AS n FROM licenses") == 1)

            let retry = try await client.activate(seed, machine: "m-c")
            #expect(retry.status == .ok)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE active") == 2)
        }
    }

    @Test func revokedSuspendedAndExpiredLicensesCannotActivate() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed()
            _ = try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/suspend")
            let suspended = try await client.activate(seed)
            #expect(suspended.status == .unprocessableContent && suspended.code == "LICENSE_SUSPENDED")
            #expect(suspended["activated"] as? Bool == false)
            _ = try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/revoke")
            let revoked = try await client.activate(seed)
            #expect(revoked.status == .unprocessableContent && revoked.code == "LICENSE_REVOKED")

            let expiring = try await client.seed(expiresAt: harness.clock.unixSeconds + 10)
            harness.clock.advance(by: 11)
            let expired = try await client.activate(expiring)
            #expect(expired.status == .unprocessableContent && expired.code == "LICENSE_EXPIRED")
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances") == 0)
        }
    }

    @Test func expiredLicenseWithFallbackActivatesWithAFallbackLease() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed(fallback: true, expiresAt: harness.clock.unixSeconds + 10)
            harness.clock.advance(by: 100)
            let reply = try await client.activate(seed)
            #expect(reply.status == .ok)
            let lease = try #require(reply.lease)
            #expect(lease.status == .fallback && lease.entitlements.isEmpty)
            #expect(lease.expiresAt == harness.clock.unixSeconds + 7 * 86_400)
        }
    }

    @Test func freeTierInstallIsLinkedWhenItActivates() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let keyless = try await client.sdk("keyless", ["instance_id": "install-1", "state": "free_tier"], seed: seed)
            #expect(keyless.status == .ok)
            let reply = try await client.sdk("activate", [
                "license_key": seed.licenseKey, "instance_name": "Mac", "free_tier_instance_id": "install-1",
            ], seed: seed)
            #expect(reply.status == .ok)
            let linked = try await client.database.sql.raw("SELECT converted_license_id FROM keyless_installs WHERE instance_id = 'install-1'")
                .first(decodingColumn: "converted_license_id", as: String?.self)
            #expect(linked == seed.licenseId)
        }
    }
}
