import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Testing

/// Protocol 6.7 and 6.8: the hosted service's C++ (keylight-cpp 0.1.2), JavaScript
/// (keylight-js 0.2.0) and C# (keylight-csharp 0.5.0) clients, replayed request by request as
/// their public sources send them (method, path, headers, body fields), and answered with the
/// fields they parse.
@Suite(.timeLimit(.minutes(6))) struct HostedClientsTests {
    /// The tenant's keyset, as every client fetches it (no SDK key).
    static func tenantKeyset(_ client: Client) async throws -> Keyset {
        let reply = try await client.request(.get, "/acme/.well-known/keylight-keys")
        #expect(reply.status == .ok)
        return try Keyset(json: reply.body)
    }

    static func json(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    /// keylight-cpp 0.1.2: no SDK key ever, `Content-Type: application/json` twice (cpp-httplib
    /// adds its own), `instance_name` "device", and a deactivate of `{"instance_id"}` alone.
    @Test func theCppClientActivatesValidatesAndFreesItsSeatWithoutAnSDKKey() async throws {
        try await Harness().run { client in
            let seed = try await client.seed(limit: 1)
            var headers = HTTPFields()
            headers.append(HTTPField(name: .contentType, value: "application/json"))
            headers.append(HTTPField(name: .contentType, value: "application/json"))
            headers[.userAgent] = "cpp-httplib/0.18.3"
            headers[.init("Accept-Encoding")!] = ""
            let activateBody = try Self.json(["license_key": seed.licenseKey, "instance_name": "device", "sdk_version": "0.1.2", "platform": "linux", "app_version": "1.2.3"])
            // Required by default: 401 without the key.
            #expect(try await client.request(.post, "/acme/app/activate", headers: headers, body: activateBody).status == .unauthorized)
            let off = try await client.admin(.patch, "/tenants/acme/products/app", ["sdk_key_required": false])
            #expect(off.status == .ok && off["sdk_key_required"] as? Bool == false)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'product.update' AND details LIKE '%sdk_key_required%'") == 1)
            let activated = try await client.request(.post, "/acme/app/activate", headers: headers, body: activateBody)
            #expect(activated.status == .ok)  // exactly 200: the C++ client takes nothing else
            #expect(activated["activated"] as? Bool == true)
            let instance = try #require(activated["instance_id"] as? String)
            let lease = try #require(activated.lease)
            #expect(lease.verify(with: try await Self.tenantKeyset(client), now: client.clock.unixSeconds).isCurrent && lease.entitlements.contains("pro"))
            // A key that is present must still be right.
            var wrong = headers
            wrong[.init("X-Keylight-SDK-Key")!] = "kl_sdk_wrong"
            #expect(try await client.request(.post, "/acme/app/validate", headers: wrong, body: "{}").status == .unauthorized)
            let validated = try await client.request(.post, "/acme/app/validate", headers: headers, body: try Self.json([
                "license_key": seed.licenseKey, "instance_id": instance, "sdk_version": "0.1.2", "platform": "linux", "app_version": "1.2.3",
            ]))
            #expect(validated.status == .ok && validated.lease != nil)
            // Its deactivate: the instance id alone frees the seat (the slot is used again at once).
            let freed = try await client.request(.post, "/acme/app/deactivate", headers: headers, body: #"{"instance_id":"\#(instance)"}"#)
            #expect(freed.status == .ok && freed["deactivated"] as? Bool == true)
            #expect(try await client.count("SELECT active_instances AS n FROM licenses WHERE id = '\(seed.licenseId)'") == 0)
            #expect(try await client.request(.post, "/acme/app/activate", headers: headers, body: activateBody).status == .ok)
            // An instance nobody has: 404, and another product's instance is not this product's.
            #expect(try await client.request(.post, "/acme/app/deactivate", headers: headers, body: #"{"instance_id":"not-an-instance"}"#).status == .notFound)
            // An unknown product without a key is 401, as before: leaving the key out tells nothing.
            #expect(try await client.request(.post, "/acme/nope/activate", headers: headers, body: activateBody).status == .unauthorized)
        }
    }

    /// keylight-js 0.2.0: a base URL ending in `/` gives `//tenant/…`; a request id; the
    /// telemetry it sends (buckets as strings); the config read from the top level.
    @Test func theJavaScriptClientsPathsTelemetryAndTopLevelConfig() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            var headers: HTTPFields = [.contentType: "application/json", .init("X-Keylight-SDK-Key")!: seed.sdkKey]
            headers[.init("X-Keylight-Request-Id")!] = "3f2a9c1d"
            let telemetry: [String: Any] = ["sdk_version": "0.2.0", "platform": "linux", "sdk": "js", "app_version": "2.0.0", "arch": "x86_64", "os_version": "6.8.0", "cpu_cores": "5-8", "memory": "16-32GB"]
            let activated = try await client.request(.post, "//acme/app/activate", headers: headers, body: try Self.json(
                ["license_key": seed.licenseKey, "instance_name": "build-host", "machine_hash": String(repeating: "a", count: 64)].merging(telemetry) { $1 }
            ))
            #expect(activated.status == .ok && activated["activated"] as? Bool == true, "\(activated.text)")
            #expect(activated.headers[.init("X-Keylight-Request-Id")!] == "3f2a9c1d")
            let instance = try #require(activated["instance_id"] as? String)
            let validated = try await client.request(.post, "//acme/app/validate", headers: headers, body: try Self.json(
                ["license_key": seed.licenseKey, "instance_id": instance, "machine_hash": String(repeating: "a", count: 64)].merging(telemetry) { $1 }
            ))
            #expect(validated.status == .ok && validated["valid"] as? Bool == true)
            // The six cfg1 fields at the top level, verifying as the 0.4 client checks them.
            let top = try #require(validated["signature"] as? String)
            #expect(validated["trial_duration_days"] as? Int == 14 && validated["free_tier_enabled"] as? Bool == true)
            let config = SignedProductConfig(
                trialDurationDays: try #require(validated["trial_duration_days"] as? Int), freeTierEnabled: try #require(validated["free_tier_enabled"] as? Bool),
                issuedAt: try #require(validated["issued_at"] as? Int64), expiresAt: try #require(validated["expires_at"] as? Int64),
                kid: try #require(validated["kid"] as? String), signature: top
            )
            #expect(config.verify(tenantId: "acme", productId: "app", with: try await Self.tenantKeyset(client), now: client.clock.unixSeconds).isCurrent)
            #expect((validated["config"] as? [String: Any])?["signature"] as? String == top)
            let keyless = try await client.request(.post, "//acme/app/keyless", headers: headers, body: try Self.json(
                ["instance_id": UUID().uuidString.lowercased(), "state": "trial"].merging(telemetry) { $1 }
            ))
            #expect(keyless.status == .ok && keyless["received"] as? Bool == true && keyless["ok"] as? Bool == true && keyless["kid"] is String)
            let keyset = try await client.request(.get, "//acme/.well-known/keylight-keys")
            #expect(keyset.status == .ok && keyset["primary_kid"] is String)
            // A `//` in the query is no path's business.
            #expect(try await client.request(.get, "/acme/app/config?x=a//b", headers: headers).status == .ok)
            // `//` is for the SDK API and the keyset only.
            for path in ["//admin/v1/tenants", "//dashboard", "//portal/acme/app", "/acme//app/activate", "//healthz"] {
                #expect(try await client.request(.get, path, headers: [.authorization: "Bearer \(Harness.adminToken)"]).status == .notFound, "\(path)")
            }
        }
    }

    /// keylight-csharp 0.5.0: `application/json; charset=utf-8`, the SDK key always, the host
    /// name or the whole OS description as `instance_name`, and `"license_key":""` on deactivate.
    @Test func theCSharpClientsLongNamesEmptyKeyAndExpiredLicense() async throws {
        try await Harness().run { client in
            let seed = try await client.seed(limit: 1)
            let headers: HTTPFields = [.contentType: "application/json; charset=utf-8", .init("X-Keylight-SDK-Key")!: seed.sdkKey]
            let description = "Darwin 24.1.0 Darwin Kernel Version 24.1.0: Thu Oct 10 21:06:23 PDT 2024; root:xnu-11215.41.3~3/RELEASE_ARM64_T6041 "
            let longName = String(repeating: description, count: 3)
            #expect(longName.utf8.count > 256)
            let activated = try await client.request(.post, "/acme/app/activate", headers: headers, body: try Self.json([
                "license_key": seed.licenseKey, "instance_name": longName, "sdk_version": "0.5.0", "platform": "macos", "sdk": "csharp",
                "cpu_cores": "9-16", "memory": "32-64GB", "os_version": "15.1", "arch": "arm64", "sdk_trial_duration_days": 14,
            ]))
            #expect(activated.status == .ok, "\(activated.text)")
            let instance = try #require(activated["instance_id"] as? String)
            let stored = try #require(try await client.database.instances(licenseId: seed.licenseId).first?.name)
            #expect(stored.utf8.count == 256 && longName.hasPrefix(stored))
            #expect(Field.cut("ab\u{00E9}", maxBytes: 3) == "ab" && Field.cut("abc", maxBytes: 3) == "abc")
            // Its deactivate with an empty key frees the seat.
            let freed = try await client.request(.post, "/acme/app/deactivate", headers: headers, body: #"{"license_key":"","instance_id":"\#(instance)"}"#)
            #expect(freed.status == .ok)
            #expect(try await client.count("SELECT active_instances AS n FROM licenses WHERE id = '\(seed.licenseId)'") == 0)
            // With a key, both must match.
            let again = try #require(try await client.request(.post, "/acme/app/activate", headers: headers, body: try Self.json(["license_key": seed.licenseKey, "instance_name": "Mac"]))["instance_id"] as? String)
            let other = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType])
            let otherKey = try #require(other["license_key"] as? String)
            #expect(try await client.request(.post, "/acme/app/deactivate", headers: headers, body: #"{"license_key":"\#(otherKey)","instance_id":"\#(again)"}"#).status == .notFound)
            #expect(try await client.count("SELECT active_instances AS n FROM licenses WHERE id = '\(seed.licenseId)'") == 1)

            // An expired license without fallback: 422 LICENSE_EXPIRED with a signed `expired` lease.
            let expired = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType, "expires_at": client.clock.unixSeconds - 60])
            let expiredKey = try #require(expired["license_key"] as? String)
            let refused = try await client.request(.post, "/acme/app/activate", headers: headers, body: try Self.json(["license_key": expiredKey, "instance_name": "Mac"]))
            #expect(refused.status == .unprocessableContent && refused.code == "LICENSE_EXPIRED" && refused["activated"] as? Bool == false)
            let lease = try #require(refused.lease)
            #expect(lease.status == .expired && lease.entitlements.isEmpty && lease.licenseKeyHash == LicenseKey.hash(normalizing: expiredKey))
            #expect(lease.verify(with: try await Self.tenantKeyset(client), now: client.clock.unixSeconds).isTrusted)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE license_id = '\(try #require(expired["id"] as? String))'") == 0)
            // Keyless answers `received`.
            let keyless = try await client.request(.post, "/acme/app/keyless", headers: headers, body: #"{"instance_id":"\#(UUID().uuidString.lowercased())","state":"free_tier","sdk":"csharp","sdk_version":"0.5.0","platform":"windows"}"#)
            #expect(keyless["received"] as? Bool == true)
        }
    }

    /// The hosted demo's keys keep their own prefix in the admin API (`NOTES-····-0001`).
    @Test func anImportedKeysMaskedFormKeepsItsPrefix() async throws {
        try await Harness().run { client in
            _ = try await client.admin(.post, "/tenants", ["id": "demo", "name": "Demo"])
            _ = try await client.admin(.post, "/tenants/demo/products", ["id": "notes", "name": "Notes", "key_prefix": "NOTES"])
            _ = try await client.admin(.post, "/tenants/demo/products/notes/key-types", ["id": "pro", "display_name": "Pro", "activation_limit": 3, "duration_days": NSNull(), "fallback_access": false, "entitlements": ["pro"]])
            let imported = try await client.admin(.post, "/tenants/demo/products/notes/licenses", ["key_type_id": "pro", "license_key": "NOTES-PRO0-0000-0001"])
            #expect(imported.status == .created, "\(imported.text)")
            #expect(imported["masked_key"] as? String == "NOTES-\u{00B7}\u{00B7}\u{00B7}\u{00B7}-0001")
        }
    }

    /// A rotation names the staged key it expects: a retry after it went through changes nothing.
    @Test func rotationWithTheExpectedNextKidRunsOnce() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            let staged = try #require(try await client.admin(.post, "/tenants/acme/signing-keys/prepare")["kid"] as? String)
            // Compared as parsed JSON (the encoder's member order is not fixed).
            func keys() async throws -> NSDictionary { try await client.admin(.get, "/tenants/acme/signing-keys").json as NSDictionary }
            let keysBefore = try await keys()
            let mismatch = try await client.admin(.post, "/tenants/acme/signing-keys/rotate", ["expected_next_kid": "not-the-staged-one"])
            #expect(mismatch.status == .conflict && mismatch.code == "STAGED_KEY_MISMATCH" && mismatch["staged_kid"] as? String == staged)
            let keysAfterMismatch = try await keys()
            #expect(keysAfterMismatch == keysBefore, "\(keysBefore)\n\(keysAfterMismatch)")
            let rotated = try await client.admin(.post, "/tenants/acme/signing-keys/rotate", ["expected_next_kid": staged])
            #expect(rotated.status == .created && rotated["kid"] as? String == staged)
            let keysAfter = try await keys()
            // The retry: nothing is staged any more, so it changes nothing.
            let retry = try await client.admin(.post, "/tenants/acme/signing-keys/rotate", ["expected_next_kid": staged])
            #expect(retry.status == .conflict && retry["staged_kid"] is NSNull)
            let keysAfterRetry = try await keys()
            #expect(keysAfterRetry == keysAfter, "\(keysAfter)\n\(keysAfterRetry)")
            // Without it, a rotation runs as before; the server-wide route takes it too.
            #expect(try await client.admin(.post, "/signing-keys/rotate", ["expected_next_kid": "nope"]).status == .conflict)
            #expect(try await client.admin(.post, "/tenants/acme/signing-keys/rotate").status == .created)
        }
    }
}
