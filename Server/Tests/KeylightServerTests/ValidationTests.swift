import Foundation
import KeylightServerTestSupport
import KeylightCore
@testable import KeylightServer
import Testing

@Suite(.timeLimit(.minutes(6))) struct ValidationTests {
    @Test func validateIssuesAFreshLeaseAndASignedConfig() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed()
            let instance = try #require(try await client.activate(seed)["instance_id"] as? String)
            harness.clock.advance(by: 3_600)
            let reply = try await client.validate(seed, instance: instance)
            #expect(reply.status == .ok, "\(reply.text)")
            #expect(reply["valid"] as? Bool == true)
            let lease = try #require(reply.lease)
            let keyset = try await client.keyset()
            #expect(lease.verify(with: keyset, now: harness.clock.unixSeconds).isCurrent)
            #expect(lease.issuedAt == harness.clock.unixSeconds)
            let configData = try JSONSerialization.data(withJSONObject: try #require(reply["config"]))
            let config = try JSONDecoder().decode(SignedProductConfig.self, from: configData)
            #expect(config.trialDurationDays == 14 && config.freeTierEnabled)
            #expect(config.verify(tenantId: "acme", productId: "app", with: keyset, now: harness.clock.unixSeconds).isCurrent)
        }
    }

    @Test func validationTimeIsRecorded() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed()
            let instance = try #require(try await client.activate(seed)["instance_id"] as? String)
            harness.clock.advance(by: 500)
            _ = try await client.validate(seed, instance: instance)
            // The flush service writes buffered times every 50 ms in tests.
            var recorded: Int64?
            for _ in 0..<100 where recorded != harness.clock.unixSeconds {
                try await Task.sleep(for: .milliseconds(20))
                recorded = try await client.database.instance(id: instance)?.lastValidatedAt
            }
            #expect(recorded == harness.clock.unixSeconds)
        }
    }

    @Test func expiredLicenseWithoutFallbackIsInvalidWithAnExpiredLease() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed(fallback: false, expiresAt: harness.clock.unixSeconds + 60)
            let instance = try #require(try await client.activate(seed)["instance_id"] as? String)
            harness.clock.advance(by: 61)
            let reply = try await client.validate(seed, instance: instance)
            #expect(reply.status == .ok)
            #expect(reply["valid"] as? Bool == false)
            let lease = try #require(reply.lease)
            #expect(lease.status == .expired && lease.entitlements.isEmpty)
            #expect(lease.verify(with: try await client.keyset(), now: harness.clock.unixSeconds).isTrusted)
        }
    }

    @Test func expiredLicenseWithFallbackIsValidWithAFallbackLease() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed(fallback: true, ttl: 86_400, expiresAt: harness.clock.unixSeconds + 60)
            let instance = try #require(try await client.activate(seed)["instance_id"] as? String)
            harness.clock.advance(by: 61)
            let reply = try await client.validate(seed, instance: instance)
            #expect(reply["valid"] as? Bool == true)
            let lease = try #require(reply.lease)
            #expect(lease.status == .fallback && lease.entitlements.isEmpty)
            #expect(lease.expiresAt == harness.clock.unixSeconds + 86_400)
        }
    }

    @Test func refusalsCarryNoLease() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let instance = try #require(try await client.activate(seed)["instance_id"] as? String)
            for (action, code) in [("suspend", "LICENSE_SUSPENDED"), ("revoke", "LICENSE_REVOKED")] {
                _ = try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/\(action)")
                let reply = try await client.validate(seed, instance: instance)
                #expect(reply.status == .unprocessableContent)
                #expect(reply.code == code)
                #expect(reply["valid"] as? Bool == false)
                #expect(reply["lease"] == nil)
            }
            _ = try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/reinstate")
            #expect(try await client.validate(seed, instance: instance).status == .ok)

            _ = try await client.sdk("deactivate", ["license_key": seed.licenseKey, "instance_id": instance], seed: seed)
            let inactive = try await client.validate(seed, instance: instance)
            #expect(inactive.status == .unprocessableContent && inactive.code == "INSTANCE_INACTIVE")
            #expect(inactive["lease"] == nil)
        }
    }

    /// Protocol 6.1: 404 only for what is not there (license key, tenant, product); an instance that is
    /// unknown, or presented from another machine, is a 422 `INSTANCE_INACTIVE` verdict with no lease.
    @Test func unknownLicenseIs404AndAnUnknownOrForeignInstanceIs422() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let instance = try #require(try await client.activate(seed)["instance_id"] as? String)
            let other = try await client.mint(seed)
            let unknownKey = try await client.validate(seed, instance: instance, key: "ACME-0000-0000-0000-0000")
            #expect(unknownKey.status == .notFound && unknownKey.code == "NOT_FOUND" && unknownKey["valid"] as? Bool == false)
            let refusals = [
                try await client.validate(seed, instance: instance, key: other.key),
                try await client.validate(seed, instance: "00000000-0000-4000-8000-000000000009"),
                try await client.sdk("validate", ["license_key": seed.licenseKey, "instance_id": instance, "machine_hash": "elsewhere"], seed: seed),
            ]
            for reply in refusals {
                #expect(reply.status == .unprocessableContent && reply.code == "INSTANCE_INACTIVE", "\(reply.text)")
                #expect(reply["valid"] as? Bool == false && reply["lease"] == nil)
            }
            // The real machine still validates.
            #expect(try await client.validate(seed, instance: instance).status == .ok)
        }
    }

    @Test func remintedKeyReplacesTheOldOne() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let instance = try #require(try await client.activate(seed)["instance_id"] as? String)
            let reminted = try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/remint")
            #expect(reminted.status == .ok)
            let newKey = try #require(reminted["license_key"] as? String)
            #expect(newKey != seed.licenseKey && LicenseKey.isValid(newKey))
            // Devices still holding the old key get a verdict (the SDK treats 404 as a configuration error).
            let old = try await client.validate(seed, instance: instance)
            #expect(old.status == .unprocessableContent && old.code == "LICENSE_REVOKED" && old["lease"] == nil)
            let oldActivation = try await client.activate(seed, machine: "another")
            #expect(oldActivation.status == .unprocessableContent && oldActivation.code == "LICENSE_REVOKED")
            #expect(try await client.validate(seed, instance: instance, key: newKey).status == .ok)
            // A key that never existed is still 404.
            #expect(try await client.validate(seed, instance: instance, key: "ACME-0000-0000-0000-0000").status == .notFound)
        }
    }

    @Test func configAndKeylessServeTheSignedProductConfig() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed()
            let config = try await client.sdkRaw("config", body: nil, seed: seed, method: .get)
            #expect(config.status == .ok)
            #expect(Set(config.json.keys) == ["trial_duration_days", "free_tier_enabled", "issued_at", "expires_at", "kid", "signature"])
            let signed = try JSONDecoder().decode(SignedProductConfig.self, from: config.body)
            #expect(signed.verify(tenantId: "acme", productId: "app", with: try await client.keyset(), now: harness.clock.unixSeconds).isCurrent)

            let keyless = try await client.sdk("keyless", ["instance_id": "install-7", "state": "trial", "machine_hash": "m"], seed: seed)
            #expect(keyless.status == .ok && keyless["ok"] as? Bool == true)
            #expect(keyless["config"] is [String: Any])
            // Check-ins are written behind (the harness flushes every 50 ms).
            #expect(try await eventually { try await client.count("SELECT COUNT(*) AS n FROM keyless_installs WHERE state = 'trial'") == 1 })
            let bad = try await client.sdk("keyless", ["instance_id": "install-7", "state": "forever"], seed: seed)
            #expect(bad.status == .badRequest && bad.code == "INVALID_REQUEST")
        }
    }

    @Test func productChangesReachTheConfig() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let patched = try await client.admin(.patch, "/tenants/acme/products/app", ["trial_duration_days": 30, "free_tier_enabled": false])
            #expect(patched.status == .ok && patched["trial_duration_days"] as? Int == 30)
            let config = try await client.sdkRaw("config", body: nil, seed: seed, method: .get)
            #expect(config["trial_duration_days"] as? Int == 30)
            #expect(config["free_tier_enabled"] as? Bool == false)
        }
    }
}
