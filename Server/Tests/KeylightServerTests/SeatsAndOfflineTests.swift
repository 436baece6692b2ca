import Crypto
import Foundation
import KeylightCore
import KeylightSigning
@testable import KeylightServer
import Testing

/// Protocol 6.3 and 6.4 over HTTP: the seats list, the 409 that carries it, offline activation
/// and deactivation by proof, with their audit entries and webhooks.
@Suite(.timeLimit(.minutes(6))) struct SeatsAndOfflineTests {
    static func request(machine: String = "air-gapped-1", device: Curve25519.Signing.PrivateKey, product: String = "app") -> String {
        OfflineActivationRequest(tenantId: "acme", productId: product, machineHash: machine, instanceName: "Lab Mac", deviceKey: device.publicKey, createdAt: 1_790_000_000).armored
    }

    @Test func instancesListsActiveDevicesAndAFullLicenses409CarriesThem() async throws {
        try await Harness().run { client in
            let seed = try await client.seed(limit: 2)
            let first = try #require(try await client.activate(seed, machine: "m-1", name: "Studio Mac")["instance_id"] as? String)
            client.clock.advance(by: 10)
            let second = try #require(try await client.activate(seed, machine: "m-2", name: "MacBook")["instance_id"] as? String)
            let listed = try await client.sdk("instances", ["license_key": seed.licenseKey], seed: seed)
            #expect(listed.status == .ok, "\(listed.text)")
            #expect(listed["activation_limit"] as? Int == 2)
            let instances = try #require(listed["instances"] as? [[String: Any]])
            #expect(instances.map { $0["instance_id"] as? String } == [first, second])
            #expect(instances.first?["instance_name"] as? String == "Studio Mac")
            #expect(Set(instances[0].keys).isSuperset(of: ["instance_id", "instance_name", "activated_at", "last_seen_at"]))
            #expect(instances[1]["activated_at"] as? Int == Int(client.clock.unixSeconds))

            // The third device: 409 with the devices holding the slots, so the app can offer to free one.
            let refused = try await client.activate(seed, machine: "m-3", name: "iMac")
            #expect(refused.status == .conflict && refused.code == "ACTIVATION_LIMIT_REACHED" && refused["activated"] as? Bool == false)
            #expect(refused["activation_limit"] as? Int == 2)
            #expect((refused["instances"] as? [[String: Any]])?.compactMap { $0["instance_name"] as? String } == ["Studio Mac", "MacBook"])

            // Freeing one with the key (deactivate) lists one fewer; deactivated devices are not listed.
            #expect(try await client.sdk("deactivate", ["license_key": seed.licenseKey, "instance_id": first], seed: seed).status == .ok)
            let after = try await client.sdk("instances", ["license_key": seed.licenseKey], seed: seed)
            #expect((after["instances"] as? [[String: Any]])?.map { $0["instance_id"] as? String } == [second])
            #expect(try await client.activate(seed, machine: "m-3").status == .ok)

            // Errors as for validate: unknown key 404, bad key 400, no SDK key 401, revoked 422.
            #expect(try await client.sdk("instances", ["license_key": "ACME-0000-0000-0000-0000"], seed: seed).status == .notFound)
            #expect(try await client.sdk("instances", ["license_key": "nope"], seed: seed).code == "INVALID_REQUEST")
            #expect(try await client.sdk("instances", ["license_key": seed.licenseKey], seed: seed, sdkKey: "wrong").status == .unauthorized)
            #expect(try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/revoke").status == .ok)
            #expect(try await client.sdk("instances", ["license_key": seed.licenseKey], seed: seed).code == "LICENSE_REVOKED")
            // The app's own deactivation is audited as the customer's.
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE actor = 'customer' AND action = 'instance.deactivate'") == 1)
        }
    }

    @Test func anOfflineRequestBecomesAResponseWithALongLeaseBoundToTheDevice() async throws {
        try await Harness().run { client in
            let seed = try await client.seed(limit: 1, ttl: 3_600)
            _ = try await WebhookTests.register(client, url: "https://hooks.example.com/k")
            let device = Curve25519.Signing.PrivateKey()
            let reply = try await client.sdk("offline/activate", ["license_key": seed.licenseKey, "request": Self.request(device: device)], seed: seed)
            #expect(reply.status == .ok, "\(reply.text)")
            let response = try OfflineActivationResponse(armored: try #require(reply["response"] as? String))
            let now = client.clock.unixSeconds
            let keyset = try await client.keyset()
            #expect(response.lease.verify(with: keyset, now: now).isCurrent)
            #expect(response.lease.licenseKeyHash == (try LicenseKey(seed.licenseKey).keyHash))
            // offline_lease_days (default 365), not the key type's one-hour TTL.
            #expect(response.lease.issuedAt == now && response.lease.expiresAt == now + 365 * 86_400)
            #expect(response.isBound(to: "air-gapped-1", deviceKey: device.publicKey, keyset: keyset))
            #expect(response.config.verify(tenantId: "acme", productId: "app", with: keyset, now: now).isCurrent)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE active AND device_key IS NOT NULL") == 1)

            // The same machine again: the same instance, no new slot; another machine: 409 (cap 1).
            let again = try await client.sdk("offline/activate", ["license_key": seed.licenseKey, "request": Self.request(device: device)], seed: seed)
            #expect(try OfflineActivationResponse(armored: again["response"] as! String).instanceId == response.instanceId)
            let other = try await client.sdk("offline/activate", ["license_key": seed.licenseKey, "request": Self.request(machine: "other", device: device)], seed: seed)
            #expect(other.status == .conflict && other.code == "ACTIVATION_LIMIT_REACHED" && (other["instances"] as? [Any])?.count == 1)

            // The instance validates online like any other, from its machine, and keeps leases as long
            // as its offline one (a week-long lease would end its offline life a week later).
            let validated = try await client.sdk("validate", ["license_key": seed.licenseKey, "instance_id": response.instanceId, "machine_hash": "air-gapped-1"], seed: seed)
            #expect(validated.status == .ok && validated.lease?.expiresAt == client.clock.unixSeconds + 365 * 86_400)

            // The key alone does not free an offline device (it keeps its year-long lease and never asks
            // again): 422 INVALID_PROOF, nothing changes. The developer can.
            let keyOnly = try await client.sdk("deactivate", ["license_key": seed.licenseKey, "instance_id": response.instanceId], seed: seed)
            #expect(keyOnly.status == .unprocessableContent && keyOnly.code == "INVALID_PROOF", "\(keyOnly.text)")
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE active") == 1)

            // Audit and webhook say how.
            let audit = try await client.database.sql.raw("SELECT actor, details FROM audit_log WHERE action = 'instance.activate'").all()
            let actors = try audit.map { try $0.decode(column: "actor", as: String.self) }
            #expect(actors == ["offline"])
            let events = try await WebhookTests.outbox(client).filter { $0["type"] as? String == "instance.activated" }
            #expect(events.count == 1 && (events.first?["data"] as? [String: Any])?["how"] as? String == "offline_request")
        }
    }

    @Test func theOfflineLeaseNeverOutlivesTheLicenseAndKeyTypesSetItsLength() async throws {
        try await Harness().run { client in
            let now = client.clock.unixSeconds
            let seed = try await client.seed(expiresAt: now + 30 * 86_400)
            let reply = try await client.sdk("offline/activate", ["license_key": seed.licenseKey, "request": Self.request(device: .init())], seed: seed)
            let response = try OfflineActivationResponse(armored: try #require(reply["response"] as? String))
            #expect(response.lease.expiresAt == now + 30 * 86_400 && response.licenseExpiresAt == now + 30 * 86_400)

            let keyType = try await client.admin(.post, "/tenants/acme/products/app/key-types", [
                "id": "offline30", "display_name": "Lab", "activation_limit": 2, "fallback_access": false, "entitlements": [], "offline_lease_days": 30,
            ])
            #expect(keyType.status == .created && keyType["offline_lease_days"] as? Int == 30)
            let license = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": "offline30"])
            let key = try #require(license["license_key"] as? String)
            let short = try await client.sdk("offline/activate", ["license_key": key, "request": Self.request(device: .init())], seed: seed)
            #expect(try OfflineActivationResponse(armored: short["response"] as! String).lease.expiresAt == now + 30 * 86_400)
            for bad in [0, 3_651, -1] {
                let refused = try await client.admin(.post, "/tenants/acme/products/app/key-types", [
                    "id": "bad\(bad < 0 ? 1 : bad)", "display_name": "x", "activation_limit": 1, "fallback_access": false, "entitlements": [], "offline_lease_days": bad,
                ])
                #expect(refused.status == .badRequest, "\(bad)")
            }
        }
    }

    @Test func malformedOrForeignRequestsAre400sThatNameTheProblemAndChangeNothing() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let device = Curve25519.Signing.PrivateKey()
            let cases: [(String, String)] = [
                ("hello", "BEGIN"),
                (Self.request(device: device).replacingOccurrences(of: "REQUEST-----", with: "REQUEST----"), "BEGIN"),
                (Self.request(device: device, product: "other"), "acme/other"),
                (OfflineDeactivationProof(instanceId: "x", issuedAt: 1, signature: Data(count: 64)).armored, "deactivation file"),
                (String(repeating: "A", count: 20_000), "longer than"),
            ]
            for (text, naming) in cases {
                let reply = try await client.sdk("offline/activate", ["license_key": seed.licenseKey, "request": text], seed: seed)
                #expect(reply.status == .badRequest && reply.code == "INVALID_REQUEST", "\(reply.text)")
                #expect(reply.text.contains(naming), "\(reply.text)")
            }
            #expect(try await client.sdk("offline/activate", ["license_key": seed.licenseKey], seed: seed).code == "INVALID_REQUEST")
            #expect(try await client.sdk("offline/activate", ["license_key": seed.licenseKey, "request": 7], seed: seed).code == "INVALID_REQUEST")
            #expect(try await client.sdk("offline/activate", ["license_key": "ACME-0000-0000-0000-0000", "request": Self.request(device: device)], seed: seed).status == .notFound)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances") == 0)
        }
    }

    @Test func aProofSignedByTheDeviceKeyFreesTheSeatAndAnyOtherIsRefused() async throws {
        try await Harness().run { client in
            let seed = try await client.seed(limit: 1)
            _ = try await WebhookTests.register(client, url: "https://hooks.example.com/k")
            let device = Curve25519.Signing.PrivateKey()
            let reply = try await client.sdk("offline/activate", ["license_key": seed.licenseKey, "request": Self.request(device: device)], seed: seed)
            let instanceId = try OfflineActivationResponse(armored: try #require(reply["response"] as? String)).instanceId

            // Another key's signature: 422 INVALID_PROOF, the seat stays taken.
            let forged = try OfflineDeactivationProof.sign(instanceId: instanceId, issuedAt: 1_790_000_100, with: .init()).armored
            let refused = try await client.sdk("offline/deactivate", ["license_key": seed.licenseKey, "proof": forged], seed: seed)
            #expect(refused.status == .unprocessableContent && refused.code == "INVALID_PROOF", "\(refused.text)")
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE active") == 1)
            // Malformed: 400 naming the problem.
            let malformed = try await client.sdk("offline/deactivate", ["license_key": seed.licenseKey, "proof": "-----BEGIN KEYLIGHT DEACTIVATION-----\n%%%\n-----END KEYLIGHT DEACTIVATION-----"], seed: seed)
            #expect(malformed.status == .badRequest && malformed.text.contains("base64"))
            // Unknown instance of this license: 404.
            let stray = try OfflineDeactivationProof.sign(instanceId: "no-such-instance", issuedAt: 1, with: device).armored
            #expect(try await client.sdk("offline/deactivate", ["license_key": seed.licenseKey, "proof": stray], seed: seed).status == .notFound)

            let proof = try OfflineDeactivationProof.sign(instanceId: instanceId, issuedAt: 1_790_000_100, with: device).armored
            let freed = try await client.sdk("offline/deactivate", ["license_key": seed.licenseKey, "proof": proof], seed: seed)
            #expect(freed.status == .ok && freed["deactivated"] as? Bool == true, "\(freed.text)")
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE active") == 0)
            #expect(try await client.count("SELECT active_instances AS n FROM licenses") == 0)
            // Submitted twice: still 200, still one slot freed once.
            #expect(try await client.sdk("offline/deactivate", ["license_key": seed.licenseKey, "proof": proof], seed: seed).status == .ok)
            #expect(try await client.count("SELECT active_instances AS n FROM licenses") == 0)
            let events = try await WebhookTests.outbox(client).filter { $0["type"] as? String == "instance.deactivated" }
            #expect(events.count == 1 && (events.first?["data"] as? [String: Any])?["how"] as? String == "offline_proof")
            #expect((events.first?["data"] as? [String: Any])?["source"] as? String == "offline")

            // An instance activated online has no device key: no proof frees it.
            let online = try #require(try await client.activate(seed, machine: "online")["instance_id"] as? String)
            let guess = try OfflineDeactivationProof.sign(instanceId: online, issuedAt: 1, with: device).armored
            #expect(try await client.sdk("offline/deactivate", ["license_key": seed.licenseKey, "proof": guess], seed: seed).code == "INVALID_PROOF")
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE active") == 1)
        }
    }
}
