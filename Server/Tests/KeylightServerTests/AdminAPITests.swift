import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Testing

@Suite(.timeLimit(.minutes(6))) struct AdminAPITests {
    @Test func everyAdminRouteNeedsTheToken() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let routes: [(HTTPRequest.Method, String)] = [
                (.post, "/tenants"), (.get, "/tenants"), (.post, "/tenants/acme/products"), (.patch, "/tenants/acme/products/app"),
                (.post, "/tenants/acme/products/app/key-types"), (.post, "/tenants/acme/products/app/licenses"),
                (.get, "/tenants/acme/products/app/licenses"), (.get, "/tenants/acme/products/app/licenses/\(seed.licenseId)"),
                (.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/revoke"),
                (.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/remint"),
                (.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/instances/x/deactivate"),
                (.put, "/tenants/acme/stripe"), (.post, "/signing-keys/rotate"), (.post, "/signing-keys/k1/retire"),
                (.get, "/signing-keys"), (.get, "/audit-log"),
            ]
            let before = try await client.count("SELECT COUNT(*) AS n FROM audit_log")
            for (method, path) in routes {
                for token in [nil, "wrong", Harness.adminToken + " "] as [String?] {
                    let reply = try await client.admin(method, path, [:], token: token == Harness.adminToken + " " ? "x" + Harness.adminToken : token)
                    #expect(reply.status == .unauthorized, "\(method) \(path)")
                    #expect(reply.code == "UNAUTHORIZED")
                }
            }
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log") == before)
            #expect(try await client.count("SELECT status = 'active' AS n FROM licenses") == 1)
        }
    }

    @Test func tenantsProductsAndKeyTypesAreValidated() async throws {
        try await Harness().run { client in
            #expect(try await client.admin(.post, "/tenants", ["id": "acme", "name": "Acme"]).status == .created)
            #expect(try await client.admin(.post, "/tenants", ["id": "acme", "name": "Again"]).status == .conflict)
            for id in ["admin", "metrics", ".well-known", "Bad", "-x", "", String(repeating: "a", count: 64)] {
                let reply = try await client.admin(.post, "/tenants", ["id": id, "name": "X"])
                #expect(reply.status == .badRequest, "\(id)")
            }
            let product = try await client.admin(.post, "/tenants/acme/products", ["id": "app", "name": "App", "key_prefix": "ACME", "trial_duration_days": 7, "free_tier_enabled": false])
            #expect(product.status == .created)
            let sdkKey = try #require(product["sdk_key"] as? String)
            #expect(sdkKey.count > 40)
            // The SDK key is shown once: never in listings, never stored in clear.
            let listed = try await client.admin(.get, "/tenants/acme/products")
            #expect(!listed.text.contains(sdkKey))
            #expect(try await client.count("SELECT COUNT(*) AS n FROM products WHERE sdk_key_hash LIKE '%\(sdkKey.suffix(10))%'") == 0)
            #expect(try await client.admin(.post, "/tenants/acme/products", ["id": "p2", "name": "P", "key_prefix": "acme"]).status == .badRequest)
            #expect(try await client.admin(.post, "/tenants/nobody/products", ["id": "p2", "name": "P", "key_prefix": "ACME"]).status == .notFound)

            let badKeyTypes: [[String: Any]] = [
                ["id": "kt", "display_name": "K", "activation_limit": 0, "fallback_access": false, "entitlements": []],
                ["id": "kt", "display_name": "K", "activation_limit": 1, "fallback_access": false, "entitlements": ["a,b"]],
                ["id": "kt", "display_name": "K", "activation_limit": 1, "fallback_access": false, "entitlements": ["a|b"]],
                ["id": "kt", "display_name": "K", "activation_limit": 1, "fallback_access": false, "entitlements": ["pro"], "lease_ttl_seconds": 1],
                ["id": "kt", "display_name": "K", "activation_limit": 1, "entitlements": ["pro"]],
            ]
            for body in badKeyTypes {
                #expect(try await client.admin(.post, "/tenants/acme/products/app/key-types", body).status == .badRequest)
            }
            let keyType = try await client.admin(.post, "/tenants/acme/products/app/key-types", [
                "id": "pro", "display_name": "Pro", "activation_limit": 3, "duration_days": NSNull(), "fallback_access": true,
                "lease_ttl_seconds": 3_600, "entitlements": ["sync", "pro"],
            ])
            #expect(keyType.status == .created)
            #expect(keyType["entitlements"] as? [String] == ["pro", "sync"])
            #expect(keyType["duration_days"] is NSNull)
            #expect(try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": "nope"]).status == .notFound)
            #expect(try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": "pro", "customer_email": "not an email"]).status == .badRequest)
        }
    }

    @Test func licensesArePagedFilteredAndMasked() async throws {
        try await Harness().run { client in
            let seed = try await client.seed(email: "first@example.com")
            var keys = [seed.licenseKey]
            for index in 0..<6 {
                let reply = try await client.admin(.post, "/tenants/acme/products/app/licenses", [
                    "key_type_id": seed.keyType, "customer_email": index.isMultiple(of: 2) ? "even@example.com" : "odd@example.com",
                ])
                keys.append(try #require(reply["license_key"] as? String))
            }
            var seen: [String] = []
            var cursor: String?
            repeat {
                let query = "/tenants/acme/products/app/licenses?limit=3" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = try await client.admin(.get, query)
                #expect(page.status == .ok)
                for key in keys { #expect(!page.text.contains(key)) }
                let licenses = try #require(page["licenses"] as? [[String: Any]])
                #expect(licenses.count <= 3)
                seen += licenses.compactMap { $0["id"] as? String }
                #expect(licenses.allSatisfy { ($0["masked_key"] as? String)?.contains("····") == true })
                // Always present: a string, or null on the last page.
                #expect(page.json.keys.contains("next_cursor"))
                cursor = page["next_cursor"] as? String
            } while cursor != nil
            #expect(seen.count == 7 && Set(seen).count == 7)

            let even = try await client.admin(.get, "/tenants/acme/products/app/licenses?email=even@example.com")
            #expect((even["licenses"] as? [[String: Any]])?.count == 3)
            _ = try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/revoke")
            let revoked = try await client.admin(.get, "/tenants/acme/products/app/licenses?status=revoked")
            #expect((revoked["licenses"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [seed.licenseId])
            let suffix = try await client.admin(.get, "/tenants/acme/products/app/licenses?key_suffix=\(keys[3].suffix(4).lowercased())")
            #expect((suffix["licenses"] as? [[String: Any]])?.count == 1)
            #expect(try await client.admin(.get, "/tenants/acme/products/app/licenses?status=bogus").status == .badRequest)
            #expect(try await client.admin(.get, "/tenants/acme/products/app/licenses?limit=0").status == .badRequest)
            #expect(try await client.admin(.get, "/tenants/acme/products/app/licenses?cursor=!!").status == .badRequest)
        }
    }

    @Test func licenseDetailShowsInstancesAndAdminCanDeactivate() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed(limit: 1)
            let instance = try #require(try await client.activate(seed, name: "Studio Mac")["instance_id"] as? String)
            let detail = try await client.admin(.get, "/tenants/acme/products/app/licenses/\(seed.licenseId)")
            #expect(detail["status"] as? String == "active")
            #expect(detail["key_type_id"] as? String == seed.keyType)
            #expect(detail.json.keys.contains("expires_at"))
            let instances = try #require(detail["instances"] as? [[String: Any]])
            #expect(instances.count == 1)
            #expect(instances[0]["instance_id"] as? String == instance)
            #expect(instances[0]["instance_name"] as? String == "Studio Mac")
            #expect(instances[0]["active"] as? Bool == true)
            #expect(instances[0]["activated_at"] as? Int == Int(harness.clock.unixSeconds))
            #expect(instances[0].keys.contains("last_validated_at"))

            let off = try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/instances/\(instance)/deactivate")
            #expect(off.status == .ok)
            #expect(try await client.activate(seed, machine: "another").status == .ok)
            #expect(try await client.admin(.get, "/tenants/acme/products/app/licenses/nope").status == .notFound)
        }
    }

    @Test func everyChangeIsAudited() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let instance = try #require(try await client.activate(seed)["instance_id"] as? String)
            for action in ["suspend", "reinstate", "revoke", "remint"] {
                #expect(try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/\(action)").status == .ok)
            }
            _ = try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/instances/\(instance)/deactivate")
            #expect(try await client.admin(.put, "/tenants/acme/stripe", ["webhook_secret": "whsec_test123", "secret_key": "sk_test_456"]).status == .ok)
            _ = try await client.admin(.patch, "/tenants/acme/products/app", ["trial_duration_days": 3])
            _ = try await client.admin(.post, "/signing-keys/rotate")
            let audit = try await client.admin(.get, "/audit-log?limit=500")
            let entries = try #require(audit["entries"] as? [[String: Any]])
            let actions = Set(entries.compactMap { $0["action"] as? String })
            #expect(actions.isSuperset(of: [
                "tenant.create", "product.create", "key_type.create", "license.create", "license.suspend", "license.reinstate",
                "license.revoke", "license.remint", "instance.deactivate", "stripe.configure", "product.update", "signing_key.rotate",
            ]))
            #expect(entries.allSatisfy { $0["actor"] as? String == "admin-token" || $0["actor"] as? String == "system" })
            // Secrets never reach the audit log or the admin API's answers.
            #expect(!audit.text.contains("whsec_test123") && !audit.text.contains("sk_test_456"))
            #expect(!audit.text.contains(seed.licenseKey))
            #expect(try await client.count("SELECT COUNT(*) AS n FROM stripe_settings WHERE sealed_webhook_secret LIKE '%whsec%'") == 0)
            let paged = try await client.admin(.get, "/audit-log?limit=2")
            #expect((paged["entries"] as? [[String: Any]])?.count == 2 && paged["next_cursor"] is String)
        }
    }

    /// A product that can be listed and patched can be read on its own.
    @Test func oneProductCanBeReadOnItsOwn() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            let patched = try await client.admin(.patch, "/tenants/acme/products/app", ["trial_duration_days": 21])
            let read = try await client.admin(.get, "/tenants/acme/products/app")
            #expect(read.status == .ok && read["trial_duration_days"] as? Int == 21 && read["sdk_key"] == nil)
            #expect(NSDictionary(dictionary: read.json) == NSDictionary(dictionary: patched.json))
            #expect(try await client.admin(.get, "/tenants/acme/products/nope").status == .notFound)
            #expect(try await client.admin(.get, "/tenants/nope/products/app").status == .notFound)
        }
    }
}

/// Email checks read code points, as openapi.yaml's pattern does (schemathesis found the gap).
@Suite(.timeLimit(.minutes(6))) struct EmailFieldTests {
    @Test func anAtFollowedByAModifierIsStillAnAt() throws {
        // `@` + U+1F3FB is one Character; the address still has its `@`.
        #expect(try Field.email("ada@\u{1F3FB}example.com") == "ada@\u{1F3FB}example.com")
        #expect(try Field.email("e\u{301}@example.com") == "e\u{301}@example.com")
        #expect(throws: APIError.self) { try Field.email("ada@example") }
        #expect(throws: APIError.self) { try Field.email("ada@exa\u{2003}mple.com") }
        #expect(throws: APIError.self) { try Field.email("a@b@c.com") }
    }
}
