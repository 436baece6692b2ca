import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Testing

/// Unknown fields are refused by name, on every admin route and dashboard form, and change nothing.
@Suite(.timeLimit(.minutes(6))) struct StrictAPITests {
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
            // A file upload takes bytes, not fields (it refuses a JSON body below).
            let routes = client.server.adminRoutes.routes.filter { $0.method != "GET" && $0.fields != nil }
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
            let upload = try await client.request(.put, "/admin/v1/tenants/acme/products/app/releases/rel_x/artifacts?platform=darwin", headers: [
                .contentType: "application/json", .authorization: "Bearer \(Harness.adminToken)",
            ], body: #"{"customer_emial":"x@example.com"}"#)
            #expect(upload.status == .badRequest && upload.code == "INVALID_REQUEST", "\(upload.text)")
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

/// Every signed-in dashboard form refuses a field it does not have, by name, before it changes anything.
@Suite(.timeLimit(.minutes(6))) struct StrictDashboardFormTests {
    @Test func everyDashboardFormRefusesAnUnknownField() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            try await DashboardTests.user(client)
            let browser = DashboardBrowser(client)
            try await browser.signIn(DashboardTests.email, DashboardTests.password)
            _ = try await browser.get("/dashboard")
            let routes = client.server.dashboardRoutes.routes.filter { $0.method == "POST" }
            #expect(routes.count >= 20, "\(routes.count) dashboard forms")
            let before = try await StrictAPITests.snapshot(client)
            for route in routes where route.path != "/dashboard/logout" {
                let path = route.path
                    .replacingOccurrences(of: ":tenant", with: "acme").replacingOccurrences(of: ":product", with: "app")
                    .replacingOccurrences(of: ":id", with: seed.licenseId).replacingOccurrences(of: ":action", with: "revoke")
                    .replacingOccurrences(of: ":instance", with: "i1").replacingOccurrences(of: ":endpoint", with: "e1")
                    .replacingOccurrences(of: ":delivery", with: "d1").replacingOccurrences(of: ":event", with: "ev1")
                    .replacingOccurrences(of: ":keyType", with: seed.keyType).replacingOccurrences(of: ":kid", with: "k1")
                let reply = try await browser.post(path, [("customer_emial", "x@example.com")])
                #expect(reply.status == .badRequest, "POST \(path): \(reply.status)")
                #expect(reply.text.contains("customer_emial") && reply.text.contains("UNKNOWN_FIELD"), "POST \(path)")
                _ = try await browser.get("/dashboard")  // a fresh page, as a browser would have
            }
            #expect(try await StrictAPITests.snapshot(client) == before)
            // The forms' own fields still work.
            #expect(try await browser.post("/dashboard/tenants", [("id", "north"), ("name", "North")]).status == .seeOther)
        }
    }
}

/// openapi.yaml's admin request schemas say exactly what the server reads: the same fields, and
/// `additionalProperties: false` (Tests/OpenAPI/admin_request_fields.py reads the document).
@Suite(.timeLimit(.minutes(6))) struct OpenAPIInStepTests {
    static var pythonWithYAML: Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import yaml"]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    @Test func adminRequestSchemasMatchTheFieldsTheServerReads() async throws {
        try #require(Self.pythonWithYAML, "needs python3 with PyYAML (.ci/run installs it with schemathesis)")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", root.appendingPathComponent("Tests/OpenAPI/admin_request_fields.py").path, root.deletingLastPathComponent().appendingPathComponent("openapi.yaml").path]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        struct Operation: Sendable { let fields: [String]; let hasBody: Bool; let additional: Bool?; let permission: String? }
        let parsed = try #require(try JSONSerialization.jsonObject(with: data) as? [String: [String: Any]])
        let documented = parsed.mapValues {
            Operation(
                fields: ($0["fields"] as? [String] ?? []).sorted(), hasBody: $0["has_body"] as? Bool ?? false, additional: $0["additional"] as? Bool,
                permission: $0["permission"] as? String
            )
        }
        try await Harness().run { client in
            func normalized(_ path: String) -> String {
                "/" + path.split(separator: "/").map { $0.hasPrefix(":") || $0.hasPrefix("{") ? "{}" : String($0) }.joined(separator: "/")
            }
            var checked = 0
            // Every operation names the permission the route checks (team access, issue 50).
            for route in client.server.adminRoutes.routes {
                let key = route.method + " " + normalized(route.path)
                #expect(documented[key]?.permission == route.permission?.rawValue, "\(key): openapi \(documented[key]?.permission ?? "-"), server \(route.permission?.rawValue ?? "-")")
            }
            for route in client.server.adminRoutes.routes where ["POST", "PUT", "PATCH"].contains(route.method) {
                let key = route.method + " " + normalized(route.path)
                guard let op = documented[key] else {
                    Issue.record("\(key) is not in openapi.yaml")
                    continue
                }
                let fields = route.fields ?? []
                #expect(op.fields == fields, "\(key): openapi \(op.fields), server \(fields)")
                if op.hasBody {
                    #expect(op.additional == false, "\(key): additionalProperties must be false")
                }
                checked += 1
            }
            #expect(checked >= 25)
        }
    }
}

/// The dashboard's SDK-key box fails closed: a product form without it (a page from before the box
/// existed) keeps the key required.
@Suite(.timeLimit(.minutes(6))) struct SDKKeySettingFormTests {
    @Test func aFormWithoutTheBoxKeepsTheKeyRequired() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            try await DashboardTests.user(client)
            let browser = DashboardBrowser(client)
            try await browser.signIn(DashboardTests.email, DashboardTests.password)
            _ = try await browser.get("/dashboard/t/acme/p/app")
            #expect(try await browser.post("/dashboard/t/acme/p/app", [("name", "App"), ("trial_duration_days", "14"), ("sdk_key_optional", "on")]).status == .seeOther)
            #expect(try await client.database.product(tenantId: "acme", id: "app")?.sdkKeyRequired == false)
            _ = try await browser.get("/dashboard/t/acme/p/app")
            #expect(try await browser.post("/dashboard/t/acme/p/app", [("name", "App"), ("trial_duration_days", "14")]).status == .seeOther)
            #expect(try await client.database.product(tenantId: "acme", id: "app")?.sdkKeyRequired == true)
        }
    }
}
