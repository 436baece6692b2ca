import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Testing

/// Unknown fields are refused by name, on every admin route and dashboard form, and change nothing.
@Suite(.timeLimit(.minutes(3))) struct StrictAPITests {
    /// Rows in every table that an admin call could change: a refused call must leave them all.
    static func snapshot(_ client: Client) async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for table in ["tenants", "products", "key_types", "licenses", "instances", "audit_log", "webhook_endpoints", "tenant_signing_keys", "mail_settings", "mail_outbox", "idempotency_keys"] {
            counts[table] = try await client.count("SELECT COUNT(*) AS n FROM \(table)")
        }
        return counts
    }

    /// Every admin route that takes a body, with a field no endpoint defines: 400 `UNKNOWN_FIELD`
    /// naming it, before anything is looked up or changed.
    @Test func everyAdminRouteRefusesAnUnknownFieldByName() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let routes = client.server.adminRoutes.routes.filter { $0.method != "GET" }
            #expect(routes.count >= 25, "\(routes.count) admin routes that change something")
            let before = try await Self.snapshot(client)
            for route in routes {
                let path = route.path
                    .replacingOccurrences(of: ":tenant", with: "acme").replacingOccurrences(of: ":product", with: "app")
                    .replacingOccurrences(of: ":id", with: seed.licenseId).replacingOccurrences(of: ":instance", with: "i1")
                    .replacingOccurrences(of: ":kid", with: "k1").replacingOccurrences(of: ":delivery", with: "d1")
                let reply = try await client.request(HTTPRequest.Method(route.method)!, path, headers: [
                    .contentType: "application/json", .authorization: "Bearer \(Harness.adminToken)",
                ], body: #"{"customer_emial":"x@example.com"}"#)
                #expect(reply.status == .badRequest, "\(route.method) \(path): \(reply.status) \(reply.text)")
                #expect(reply.code == "UNKNOWN_FIELD" && reply["field"] as? String == "customer_emial", "\(route.method) \(path): \(reply.text)")
                #expect((reply["error"] as? String)?.contains("customer_emial") == true)
            }
            #expect(try await Self.snapshot(client) == before)
        }
    }

    @Test func aMisspelledFieldBesideGoodOnesChangesNothing() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let before = try await Self.snapshot(client)
            let mint = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType, "customer_emial": "a@example.com"])
            #expect(mint.status == .badRequest && mint["field"] as? String == "customer_emial")
            let keyType = try await client.admin(.post, "/tenants/acme/products/app/key-types", [
                "id": "basic", "display_name": "Basic", "activation_limit": 1, "entitlements": [String](), "lease_ttl_days": 7,
            ])
            #expect(keyType.status == .badRequest && keyType["field"] as? String == "lease_ttl_days")
            let patch = try await client.admin(.patch, "/tenants/acme/products/app", ["name": "New", "portal": false])
            #expect(patch.status == .badRequest && patch["field"] as? String == "portal")
            #expect(try await Self.snapshot(client) == before)
            #expect(try await client.database.product(tenantId: "acme", id: "app")?.name == "App")
            // The fields a route does take still work, and an empty object is no field at all.
            #expect(try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/remint", [:]).status == .ok)
        }
    }

    @Test func strictDecodingNamesNestedAndListedFields() throws {
        struct Inner: Decodable { var url: String? }
        struct Outer: Decodable { var hook: Inner?; var hooks: [Inner]?; var tags: [String: String]? }
        #expect(throws: APIError.unknownField("hook.urll")) { try StrictDecoding.json(Outer.self, from: Array(#"{"hook":{"urll":"x"}}"#.utf8)) }
        #expect(throws: APIError.unknownField("hooks[1].urll")) { try StrictDecoding.json(Outer.self, from: Array(#"{"hooks":[{"url":"a"},{"urll":"x"}]}"#.utf8)) }
        // A dictionary reads every key it holds.
        let outer = try StrictDecoding.json(Outer.self, from: Array(#"{"tags":{"any":"x"},"hook":{"url":"u"}}"#.utf8))
        #expect(outer.tags == ["any": "x"] && outer.hook?.url == "u")
        // Malformed input keeps its own errors.
        #expect(throws: APIError.invalidRequest("Field hook.url has the wrong type.")) { try StrictDecoding.json(Outer.self, from: Array(#"{"hook":{"url":1}}"#.utf8)) }
        #expect(StrictDecoding.fieldNames(of: CreateLicenseRequest.self) == ["customer_email", "expires_at", "key_type_id", "license_key", "send_email", "updates_until"])
        #expect(StrictDecoding.fieldNames(of: NoFields.self) == [])
    }
}
