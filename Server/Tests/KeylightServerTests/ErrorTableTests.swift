import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Testing

/// Every row of the protocol's error table, with its status and code; none changes anything.
@Suite(.timeLimit(.minutes(6))) struct ErrorTableTests {
    @Test func badRequests() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let cases: [(String, String)] = [
                ("activate", "{not json"),
                ("activate", "[]"),
                ("activate", #"{"instance_name":"Mac"}"#),
                ("activate", #"{"license_key":"ACME-00","instance_name":"Mac"}"#),
                ("activate", #"{"license_key":"ACME_IIII-0000-0000-0000","instance_name":"Mac"}"#),
                ("activate", #"{"license_key":"ACME-\#(String(repeating: "0", count: 60))","instance_name":"Mac"}"#),
                ("activate", #"{"license_key":"\#(seed.licenseKey)"}"#),
                ("activate", #"{"license_key":"\#(seed.licenseKey)","instance_name":"Mac","machine_hash":"\#(String(repeating: "m", count: 129))"}"#),
                ("activate", #"{"license_key":42,"instance_name":"Mac"}"#),
                ("activate", #"{"license_key":"\#(seed.licenseKey)","instance_name":"Mac\u0007"}"#),
                ("validate", #"{"license_key":"\#(seed.licenseKey)"}"#),
                ("validate", #"{"license_key":"\#(seed.licenseKey)","instance_id":"a/b"}"#),
                ("keyless", #"{"state":"trial"}"#),
            ]
            for (action, body) in cases {
                let reply = try await client.sdkRaw(action, body: body, seed: seed)
                #expect(reply.status == .badRequest, "\(action) \(body.prefix(80)): \(reply.text)")
                #expect(reply.code == "INVALID_REQUEST")
                #expect((reply["error"] as? String)?.isEmpty == false)
                if action == "activate" { #expect(reply["activated"] as? Bool == false) }
                if action == "validate" { #expect(reply["valid"] as? Bool == false) }
            }
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances") == 0)
        }
    }

    @Test func unauthorized() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let body = #"{"license_key":"\#(seed.licenseKey)","instance_name":"Mac"}"#
            let missing = try await client.request(.post, "/acme/app/activate", headers: [.contentType: "application/json"], body: body)
            #expect(missing.status == .unauthorized && missing.code == "UNAUTHORIZED")
            #expect(missing["activated"] as? Bool == false)
            let wrong = try await client.sdkRaw("activate", body: body, seed: seed, sdkKey: seed.sdkKey + "x")
            #expect(wrong.status == .unauthorized && wrong.code == "UNAUTHORIZED")
            let config = try await client.sdkRaw("config", body: nil, seed: seed, sdkKey: "nope", method: .get)
            #expect(config.status == .unauthorized)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances") == 0)
        }
    }

    @Test func notFound() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let body = #"{"license_key":"\#(seed.licenseKey)","instance_name":"Mac"}"#
            for path in ["/nobody/app/activate", "/acme/nothing/activate", "/admin/app/activate", "/Acme/app/activate"] {
                let reply = try await client.sdkRaw("activate", body: body, seed: seed, path: path)
                #expect(reply.status == .notFound, "\(path)")
                #expect(reply.code == "NOT_FOUND")
            }
            let unknownLicense = try await client.activate(seed, key: "ACME-ZZZZ-ZZZZ-ZZZZ-ZZZZ")
            #expect(unknownLicense.status == .notFound && unknownLicense["activated"] as? Bool == false)
            let unknownInstance = try await client.sdk("deactivate", ["license_key": seed.licenseKey, "instance_id": "missing"], seed: seed)
            #expect(unknownInstance.status == .notFound)
            let route = try await client.request(.get, "/no/such/route/here")
            #expect(route.status == .notFound && route.code == "NOT_FOUND")
        }
    }

    @Test func payloadTooLarge() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let huge = #"{"license_key":"\#(seed.licenseKey)","instance_name":"Mac","pad":"\#(String(repeating: "x", count: 70_000))"}"#
            let reply = try await client.sdkRaw("activate", body: huge, seed: seed)
            #expect(reply.status == .contentTooLarge)
            #expect(reply.code == "PAYLOAD_TOO_LARGE")
            #expect(reply["activated"] as? Bool == false)
            // Just under the limit is fine (unknown fields are ignored).
            let padding = 64 * 1024 - 200
            let fits = #"{"license_key":"\#(seed.licenseKey)","instance_name":"Mac","pad":"\#(String(repeating: "x", count: padding))"}"#
            #expect(try await client.sdkRaw("activate", body: fits, seed: seed).status == .ok)
            let admin = try await client.request(.post, "/admin/v1/tenants", headers: [.authorization: "Bearer \(Harness.adminToken)"], body: huge)
            #expect(admin.status == .contentTooLarge)
        }
    }

    @Test func rateLimitedPerLicenseWithRetryAfter() async throws {
        var limits = ServerLimits.unlimited
        limits.perLicense = .init(perMinute: 1, burst: 3)
        try await Harness(limits: limits).run { client in
            let seed = try await client.seed(limit: 10)
            for index in 0..<3 {
                #expect(try await client.activate(seed, machine: "m\(index)").status == .ok)
            }
            let limited = try await client.activate(seed, machine: "m9")
            #expect(limited.status == .tooManyRequests)
            #expect(limited.code == "RATE_LIMITED")
            #expect(limited["activated"] as? Bool == false)
            #expect(limited.headers[.retryAfter].flatMap(Int.init).map { $0 >= 1 } == true)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances") == 3)
            // The limiter runs on the server's injected clock: a minute later one token is back.
            client.clock.advance(by: 60)
            #expect(try await client.activate(seed, machine: "m9").status == .ok)
            #expect(try await client.activate(seed, machine: "m10").status == .tooManyRequests)
            // Another license is not affected.
            let other = try await client.mint(seed)
            #expect(try await client.activate(seed, key: other.key).status == .ok)
        }
    }

    @Test func rateLimitedPerAddress() async throws {
        var limits = ServerLimits.unlimited
        // One token a minute: nothing refills while the test runs, however slow the machine.
        limits.perAddress = .init(perMinute: 1, burst: 5)
        try await Harness(limits: limits).run { client in
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<8 {
                statuses.append(try await client.request(.get, "/acme/app/config", headers: [.init("X-Keylight-SDK-Key")!: "k"]).status)
            }
            #expect(statuses.prefix(5).allSatisfy { $0 != .tooManyRequests })
            #expect(statuses.suffix(3).allSatisfy { $0 == .tooManyRequests })
            let reply = try await client.request(.get, "/acme/app/config")
            #expect(reply.code == "RATE_LIMITED")
            #expect(reply.headers[.retryAfter] != nil)
            // Refused before routing, activate and validate still report their outcome field.
            let activate = try await client.request(.post, "/acme/app/activate", body: "{}")
            #expect(activate.status == .tooManyRequests && activate["activated"] as? Bool == false)
            let validate = try await client.request(.post, "/acme/app/validate", body: "{}")
            #expect(validate.status == .tooManyRequests && validate["valid"] as? Bool == false)
            #expect(try await client.request(.post, "/acme/app/deactivate", body: "{}").json.keys.sorted() == ["code", "error"])
            // Health checks are never limited.
            #expect(try await client.request(.get, "/healthz").status == .ok)
        }
    }
}

@Suite(.timeLimit(.minutes(6))) struct FieldTests {
    @Test(arguments: ["a\u{0}", "a\u{1F}b", "\u{7F}", "x\u{85}y", "\u{9F}"])
    func controlCharactersAreFound(text: String) {
        #expect(Field.containsControlCharacter(text))
    }

    @Test(arguments: ["plain", "Studio Mac — Ünïcødé", "\u{A0}", "日本語", "emoji 🎉", "¢"])
    func ordinaryTextIsNot(text: String) {
        #expect(!Field.containsControlCharacter(text))
    }
}

/// A known path asked with a method it does not have: 405 with `Allow` (RFC 9110), before any
/// authentication, and nothing changes; an unknown path stays 404.
@Suite(.timeLimit(.minutes(6))) struct MethodNotAllowedTests {
    @Test func knownPathsAnswer405WithAllow() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let cases: [(HTTPRequest.Method, String, String)] = [
                (.trace, "/healthz", "GET, HEAD"),
                (.post, "/healthz", "GET, HEAD"),
                (HTTPRequest.Method("QUERY")!, "/.well-known/keylight-keys.json", "GET, HEAD"),
                (.delete, "/\(seed.tenant)/\(seed.product)/activate", "POST"),
                (.get, "/\(seed.tenant)/\(seed.product)/validate", "POST"),
                (.put, "/\(seed.tenant)/\(seed.product)/config", "GET, HEAD"),
                (.patch, "/admin/v1/tenants", "GET, HEAD, POST"),
                (.delete, "/admin/v1/tenants/\(seed.tenant)/products/\(seed.product)/licenses/\(seed.licenseId)/revoke", "POST"),
                (.options, "/stripe/webhook/\(seed.tenant)", "POST"),
            ]
            for (method, path, allow) in cases {
                let reply = try await client.request(method, path)
                #expect(reply.status == .methodNotAllowed, "\(method) \(path): \(reply.status)")
                #expect(reply.headers[.allow] == allow, "\(method) \(path)")
                #expect(reply.code == "METHOD_NOT_ALLOWED")
            }
            #expect(try await client.request(.trace, "/no/such/route/here").status == .notFound)
            #expect(try await client.request(.head, "/healthz").status == .ok)
            let license = try await client.admin(.get, "/tenants/\(seed.tenant)/products/\(seed.product)/licenses/\(seed.licenseId)")
            #expect(license["status"] as? String == "active")
        }
    }
}
