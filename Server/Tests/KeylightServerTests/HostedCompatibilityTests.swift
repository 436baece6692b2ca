import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import KeylightServerTestSupport
import Testing

/// Protocol 6.1: what the hosted service's clients and migrated customers need from this server.
@Suite(.timeLimit(.minutes(6))) struct HostedCompatibilityTests {
    @Test func productPrefixesOfTwoToEightCharacters() async throws {
        try await Harness().run { client in
            _ = try await client.admin(.post, "/tenants", ["id": "acme", "name": "Acme"])
            for (index, prefix) in ["AB", "PHOTOAPP"].enumerated() {
                let product = try await client.admin(.post, "/tenants/acme/products", ["id": "p\(index)", "name": "P", "key_prefix": prefix])
                #expect(product.status == .created && product["key_prefix"] as? String == prefix)
                _ = try await client.admin(.post, "/tenants/acme/products/p\(index)/key-types", [
                    "id": "pro", "display_name": "Pro", "activation_limit": 1, "fallback_access": false, "entitlements": [],
                ])
                let license = try await client.admin(.post, "/tenants/acme/products/p\(index)/licenses", ["key_type_id": "pro"])
                let key = try #require(license["license_key"] as? String)
                #expect(try key.hasPrefix(prefix + "-") && key.count == prefix.count + 20 && LicenseKey(key).isMintedFormat)
            }
            for prefix in ["A", "PHOTOAPPS", "ab", "A-B"] {
                let refused = try await client.admin(.post, "/tenants/acme/products", ["id": "bad", "name": "P", "key_prefix": prefix])
                #expect(refused.status == .badRequest && refused.code == "INVALID_REQUEST", "\(prefix)")
            }
            #expect(try await client.count("SELECT COUNT(*) AS n FROM products") == 2)
        }
    }

    @Test func anImportedHostedKeyActivatesValidatesAndCannotBeImportedTwice() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let licenses = "/tenants/acme/products/app/licenses"
            let imported = try await client.admin(.post, licenses, ["key_type_id": seed.keyType, "license_key": "acme-hosted-7f3a-9c21-key"])
            #expect(imported.status == .created)
            #expect(imported["license_key"] as? String == "ACME-HOSTED-7F3A-9C21-KEY")
            let id = try #require(imported["id"] as? String)
            let shown = try await client.admin(.get, "\(licenses)/\(id)")
            #expect(!shown.text.contains("HOSTED-7F3A"))

            // The app sends the key as the customer typed it; the server finds it by the §1 hash.
            let activated = try await client.activate(seed, key: " acme-hosted-7f3a-9c21-key ")
            #expect(activated.status == .ok)
            let instance = try #require(activated["instance_id"] as? String)
            let lease = try #require(activated.lease)
            #expect(lease.licenseKeyHash == LicenseKey.hash(normalizing: "ACME-HOSTED-7F3A-9C21-KEY"))
            #expect(try await client.validate(seed, instance: instance, key: "ACME-HOSTED-7F3A-9C21-KEY").status == .ok)

            let before = try await client.count("SELECT COUNT(*) AS n FROM licenses")
            let again = try await client.admin(.post, licenses, ["key_type_id": seed.keyType, "license_key": "ACME-HOSTED-7F3A-9C21-KEY"])
            #expect(again.status == .conflict && again.code == "CONFLICT")
            let minted = try await client.admin(.post, licenses, ["key_type_id": seed.keyType, "license_key": seed.licenseKey])
            #expect(minted.status == .conflict)
            for bad in ["NOPE-HOSTED-KEY-0001", "ACME_HOSTED", "ACME-1", "ACME-" + String(repeating: "9", count: 60), ""] {
                let refused = try await client.admin(.post, licenses, ["key_type_id": seed.keyType, "license_key": bad])
                #expect(refused.status == .badRequest, "\(bad)")
            }
            #expect(try await client.count("SELECT COUNT(*) AS n FROM licenses") == before)
        }
    }

    @Test func keylessAcceptsTrialFreeTierAndExpired() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            for state in ["trial", "free_tier", "expired"] {
                let reply = try await client.sdk("keyless", ["instance_id": "install-\(state)", "state": state], seed: seed)
                #expect(reply.status == .ok && reply["ok"] as? Bool == true, "\(state): \(reply.text)")
            }
            let refused = try await client.sdk("keyless", ["instance_id": "install-x", "state": "licensed"], seed: seed)
            #expect(refused.status == .badRequest && refused.code == "INVALID_REQUEST")
        }
    }

    /// keylight-rust sends `app_version` as the app sets it: long or odd telemetry never refuses a request.
    @Test func telemetryOfAnyLengthIsAcceptedNotRefused() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let long = String(repeating: "9", count: 300)
            let activated = try await client.sdk("activate", [
                "license_key": seed.licenseKey, "instance_name": "Mac", "machine_hash": "m1",
                "sdk_version": long, "platform": "macos\u{7}", "app_version": "2.0 (build " + long + ")",
            ], seed: seed)
            #expect(activated.status == .ok, "\(activated.text)")
            // Protocol 6.8: telemetry is never a reason to refuse; a number is read as its text.
            let wrongType = try await client.sdkRaw("activate", body: #"{"license_key":"\#(seed.licenseKey)","instance_name":"Mac","app_version":42,"platform":{"os":"mac"}}"#, seed: seed)
            #expect(wrongType.status == .ok, "\(wrongType.text)")
            let instance = try #require(wrongType["instance_id"] as? String)
            #expect(try await eventually { try await client.count("SELECT COUNT(*) AS n FROM instances WHERE id = '\(instance)' AND app_version = '42' AND platform IS NULL") == 1 })
        }
    }
}
