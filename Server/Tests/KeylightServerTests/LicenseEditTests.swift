import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Testing

/// A license's life after the sale (issue 49): `PATCH …/licenses/{id}`, `renew`, and expiry that
/// starts on first activation, on every storage backend.
@Suite(.timeLimit(.minutes(6))) struct LicenseEditTests {
    static let base = "/tenants/acme/products/app/licenses"

    static func patch(_ client: Client, _ id: String, _ body: [String: Any], headers: HTTPFields = [:]) async throws -> Reply {
        try await client.admin(.patch, "\(base)/\(id)", body)
    }

    static func keyType(_ client: Client, _ id: String, limit: Int = 3, entitlements: [String], extra: [String: Any] = [:]) async throws {
        var body: [String: Any] = ["id": id, "display_name": id.capitalized, "activation_limit": limit, "fallback_access": false, "entitlements": entitlements]
        body.merge(extra) { $1 }
        let reply = try await client.admin(.post, "/tenants/acme/products/app/key-types", body)
        #expect(reply.status == .created, "\(reply.text)")
    }

    @Test(arguments: StorageBackend.available)
    func aMoveToAnotherKeyTypeKeepsTheKeyAndItsDevicesAndTheNextLeaseCarriesItsEntitlements(_ backend: StorageBackend) async throws {
        try await Harness.on(backend).run { client in
            let seed = try await client.seed(entitlements: ["basic"])
            try await Self.keyType(client, "pro2", limit: 5, entitlements: ["basic", "pro", "v2"], extra: ["updates_days": 365])
            let _ = try await WebhookTests.register(client, url: "https://hooks.example.com/in", events: ["license.updated"])
            let activated = try await client.activate(seed)
            let instance = try #require(activated["instance_id"] as? String)
            #expect(activated.lease?.entitlements == ["basic"])

            let moved = try await Self.patch(client, seed.licenseId, ["key_type_id": "pro2"])
            #expect(moved.status == .ok, "\(moved.text)")
            #expect(moved["key_type_id"] as? String == "pro2")
            #expect(moved["activation_limit"] as? Int == 5)
            #expect(moved["entitlements"] as? [String] == ["basic", "pro", "v2"])
            #expect(moved["active_instances"] as? Int == 1)
            // The update window belongs to the purchase: a move keeps the license's own date.
            #expect(moved["updates_until"] is NSNull)

            // The same key, the same device: the next validation is signed with the new entitlements.
            let validated = try await client.validate(seed, instance: instance)
            #expect(validated.status == .ok, "\(validated.text)")
            #expect(validated.lease?.entitlements == ["basic", "pro", "v2"])
            #expect(validated.lease?.verify(with: try await client.keyset(), now: client.clock.unixSeconds).isTrusted == true)

            let events = try await WebhookTests.outbox(client).filter { $0["type"] as? String == "license.updated" }
            #expect(events.count == 1)
            let data = try #require(events.first?["data"] as? [String: Any])
            #expect((data["changes"] as? [String: [String]])?["key_type_id"] == [seed.keyType, "pro2"])
            let audit = try await client.admin(.get, "/audit-log?tenant=acme")
            let entries = try #require(audit["entries"] as? [[String: Any]])
            #expect(entries.contains { $0["action"] as? String == "license.update" && $0["target"] as? String == seed.licenseId })
        }
    }

    @Test(arguments: StorageBackend.available)
    func everyFieldIsEditedCheckedAndShown(_ backend: StorageBackend) async throws {
        try await Harness.on(backend).run { client in
            let seed = try await client.seed(entitlements: ["pro"])
            let id = seed.licenseId
            let edited = try await Self.patch(client, id, [
                "activation_limit": 7, "expires_at": 1_900_000_000, "updates_until": 1_850_000_000,
                "entitlements_add": ["export-pdf", "sync"], "customer_email": "New@Example.com", "note": "Upgraded by phone.\nTicket 42",
                "metadata": ["reseller": "bundlehunt", "seats_bought": 7, "vip": true],
            ])
            #expect(edited.status == .ok, "\(edited.text)")
            #expect(edited["activation_limit"] as? Int == 7 && edited["activation_limit_override"] as? Int == 7)
            #expect(edited["expires_at"] as? Int64 == 1_900_000_000 && edited["updates_until"] as? Int64 == 1_850_000_000)
            #expect(edited["entitlements"] as? [String] == ["export-pdf", "pro", "sync"])
            #expect(edited["entitlements_added"] as? [String] == ["export-pdf", "sync"])
            #expect(edited["customer_email"] as? String == "new@example.com")
            #expect(edited["note"] as? String == "Upgraded by phone.\nTicket 42")
            let metadata = try #require(edited["metadata"] as? [String: Any])
            #expect(metadata["reseller"] as? String == "bundlehunt" && metadata["seats_bought"] as? Int == 7 && metadata["vip"] as? Bool == true)

            // A merge patch: null removes one key, the others stay; null limit goes back to the key type's.
            let merged = try await Self.patch(client, id, ["metadata": ["vip": NSNull(), "region": "eu"], "activation_limit": NSNull(), "entitlements_remove": ["sync"]])
            #expect(merged.status == .ok, "\(merged.text)")
            #expect((merged["metadata"] as? [String: Any]).map { Set($0.keys) } == ["reseller", "seats_bought", "region"])
            #expect(merged["activation_limit"] as? Int == 3 && merged["activation_limit_override"] is NSNull)
            #expect(merged["entitlements"] as? [String] == ["export-pdf", "pro"])

            // GET and the list show the same, and the list filters by key type and metadata.
            let read = try await client.admin(.get, "\(Self.base)/\(id)")
            #expect(read["entitlements_added"] as? [String] == ["export-pdf"] && read["note"] as? String == "Upgraded by phone.\nTicket 42")
            let other = try await client.mint(seed)
            _ = try await Self.patch(client, other.id, ["metadata": ["reseller": "stacksocial", "seats_bought": "7"]])
            func listed(_ query: String) async throws -> [String] {
                let page = try await client.admin(.get, "\(Self.base)?\(query)")
                #expect(page.status == .ok, "\(page.text)")
                return (page["licenses"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            }
            #expect(try await listed("metadata.reseller=bundlehunt") == [id])
            // 7 the number and "7" the string are both found by the text 7.
            #expect(Set(try await listed("metadata.seats_bought=7")) == [id, other.id])
            #expect(try await listed("metadata.reseller=bundlehunt&metadata.region=eu") == [id])
            #expect(try await listed("metadata.reseller=nobody").isEmpty)
            #expect(Set(try await listed("key_type_id=\(seed.keyType)")) == [id, other.id])
            #expect(try await listed("key_type_id=none").isEmpty)
            #expect(try await client.admin(.get, "\(Self.base)?metadata.bad%20key=x").status == .badRequest)

            // The next validation signs the add-ons and the new updates bound.
            let lease = try #require(try await client.activate(seed).lease)
            #expect(lease.entitlements == ["export-pdf", "pro", "updates-until:1850000000"])
        }
    }

    @Test(arguments: StorageBackend.available)
    func badEditsAreRefusedAndChangeNothing(_ backend: StorageBackend) async throws {
        try await Harness.on(backend).run { client in
            let seed = try await client.seed(entitlements: ["pro"])
            let before = NSDictionary(dictionary: try await client.admin(.get, "\(Self.base)/\(seed.licenseId)").json)
            let bad: [([String: Any], HTTPResponse.Status, String)] = [
                ([:], .badRequest, "INVALID_REQUEST"),
                (["colour": "red"], .badRequest, "UNKNOWN_FIELD"),
                (["activation_limit": 0], .badRequest, "INVALID_REQUEST"),
                (["activation_limit": 100_001], .badRequest, "INVALID_REQUEST"),
                (["expires_at": -5], .badRequest, "INVALID_REQUEST"),
                (["entitlements_add": ["updates-until:99"]], .badRequest, "INVALID_REQUEST"),
                (["entitlements_add": ["Bad Code"]], .badRequest, "INVALID_REQUEST"),
                (["entitlements_add": ["a"], "entitlements_remove": ["a"]], .badRequest, "INVALID_REQUEST"),
                (["entitlements_remove": ["pro"]], .unprocessableContent, "ENTITLEMENT_FROM_KEY_TYPE"),
                (["customer_email": "not-an-address"], .badRequest, "INVALID_REQUEST"),
                (["metadata": ["nested": ["a": 1]]], .badRequest, "INVALID_REQUEST"),
                (["metadata": ["k": String(repeating: "x", count: 501)]], .badRequest, "INVALID_REQUEST"),
                (["note": "bell\u{07}"], .badRequest, "INVALID_REQUEST"),
                (["key_type_id": "nope"], .unprocessableContent, "UNKNOWN_KEY_TYPE"),
            ]
            for (body, status, code) in bad {
                let reply = try await Self.patch(client, seed.licenseId, body)
                #expect(reply.status == status && reply.code == code, "\(body): \(reply.status) \(reply.text)")
            }
            // A key type of another product: 422, and the license stays where it is.
            #expect(try await client.admin(.post, "/tenants/acme/products", ["id": "other", "name": "Other", "key_prefix": "OTHR"]).status == .created)
            #expect(try await client.admin(.post, "/tenants/acme/products/other/key-types", [
                "id": "elsewhere", "display_name": "Elsewhere", "activation_limit": 1, "fallback_access": false, "entitlements": [String](),
            ]).status == .created)
            let across = try await Self.patch(client, seed.licenseId, ["key_type_id": "elsewhere"])
            #expect(across.status == .unprocessableContent && across.code == "KEY_TYPE_OF_OTHER_PRODUCT", "\(across.text)")
            #expect(NSDictionary(dictionary: try await client.admin(.get, "\(Self.base)/\(seed.licenseId)").json) == before)
            #expect(try await Self.patch(client, "no-such-license", ["note": "x"]).status == .notFound)
            // The same edit twice changes nothing the second time: no second audit entry or event.
            #expect(try await Self.patch(client, seed.licenseId, ["note": "once"]).status == .ok)
            #expect(try await Self.patch(client, seed.licenseId, ["note": "once"]).status == .ok)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'license.update'") == 1)
        }
    }

    @Test(arguments: StorageBackend.available)
    func aLimitLoweredBelowTheDevicesInUseFreesNoneAndRefusesNewOnes(_ backend: StorageBackend) async throws {
        try await Harness.on(backend).run { client in
            let seed = try await client.seed(limit: 3)
            var instances: [String] = []
            for machine in ["m1", "m2", "m3"] {
                instances.append(try #require(try await client.activate(seed, machine: machine)["instance_id"] as? String))
            }
            let lowered = try await Self.patch(client, seed.licenseId, ["activation_limit": 1])
            #expect(lowered.status == .ok && lowered["over_limit"] as? Bool == true && lowered["active_instances"] as? Int == 3, "\(lowered.text)")
            // Every device keeps validating; a new one is refused.
            for instance in instances { #expect(try await client.validate(seed, instance: instance).status == .ok) }
            let refused = try await client.activate(seed, machine: "m4")
            #expect(refused.status == .conflict && refused.code == "ACTIVATION_LIMIT_REACHED", "\(refused.text)")
            // Until the count is under the limit: two freed leave one, still not under 1.
            for instance in instances.prefix(2) {
                #expect(try await client.admin(.post, "\(Self.base)/\(seed.licenseId)/instances/\(instance)/deactivate").status == .ok)
            }
            #expect(try await client.activate(seed, machine: "m4").status == .conflict)
            #expect(try await client.admin(.post, "\(Self.base)/\(seed.licenseId)/instances/\(instances[2])/deactivate").status == .ok)
            #expect(try await client.activate(seed, machine: "m4").status == .ok)
            #expect(try await client.admin(.get, "\(Self.base)/\(seed.licenseId)")["over_limit"] as? Bool == false)
        }
    }

    @Test(arguments: StorageBackend.available)
    func renewWithEachBasisAndField(_ backend: StorageBackend) async throws {
        let harness = try await Harness.on(backend)
        try await harness.run { client in
            let now = harness.clock.unixSeconds
            let day: Int64 = 86_400
            let seed = try await client.seed(expiresAt: now + 10 * day)
            let _ = try await WebhookTests.register(client, url: "https://hooks.example.com/in", events: ["license.renewed"])
            func renew(_ id: String, _ body: [String: Any]) async throws -> Reply {
                try await client.admin(.post, "\(Self.base)/\(id)/renew", body)
            }
            // from_expiry (the default): ten days left plus 30.
            let extended = try await renew(seed.licenseId, ["days": 30])
            #expect(extended.status == .ok && extended["expires_at"] as? Int64 == now + 40 * day, "\(extended.text)")
            // from_now: 30 days from today, whatever was there.
            #expect(try await renew(seed.licenseId, ["days": 30, "basis": "from_now"])["expires_at"] as? Int64 == now + 30 * day)
            // from_now_if_expired: still running, so from its expiry...
            #expect(try await renew(seed.licenseId, ["days": 5, "basis": "from_now_if_expired"])["expires_at"] as? Int64 == now + 35 * day)
            // ...and once past it, from now.
            harness.clock.advance(by: 40 * day)
            let later = harness.clock.unixSeconds
            #expect(try await renew(seed.licenseId, ["days": 5, "basis": "from_now_if_expired"])["expires_at"] as? Int64 == later + 5 * day)
            // updates_until: none yet, so from_expiry has nothing to extend (422), from_now sets one.
            let nothing = try await renew(seed.licenseId, ["days": 365, "field": "updates_until"])
            #expect(nothing.status == .unprocessableContent && nothing.code == "NOTHING_TO_RENEW", "\(nothing.text)")
            #expect(try await renew(seed.licenseId, ["days": 365, "field": "updates_until", "basis": "from_now"])["updates_until"] as? Int64 == later + 365 * day)
            // A lifetime license: from_expiry says why it cannot.
            let lifetime = try await client.mint(seed)
            let refused = try await renew(lifetime.id, ["days": 30])
            #expect(refused.status == .unprocessableContent && refused.text.contains("never ends"))
            for bad in [["days": 0], ["days": 30, "basis": "sometime"], ["days": 30, "field": "note"], ["basis": "from_now"]] as [[String: Any]] {
                #expect(try await renew(seed.licenseId, bad).status == .badRequest)
            }
            let events = try await WebhookTests.outbox(client).filter { $0["type"] as? String == "license.renewed" }
            #expect(events.count == 5)
            let changes = events.compactMap { ($0["data"] as? [String: Any])?["changes"] as? [String: [String]] }
            #expect(changes.contains { $0["expires_at"] == ["\(now + 10 * day)", "\(now + 40 * day)"] })
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'license.renew'") == 5)
        }
    }

    @Test(arguments: StorageBackend.available)
    func aKeyTypeThatStartsOnFirstActivationDatesItsLicensesThen(_ backend: StorageBackend) async throws {
        let harness = try await Harness.on(backend)
        try await harness.run { client in
            let seed = try await client.seed(durationDays: 365, keyTypeFields: ["expires_from": "first_activation", "updates_days": 180])
            let keyTypes = try await client.admin(.get, "/tenants/acme/products/app/key-types")
            #expect((keyTypes["key_types"] as? [[String: Any]])?.first { $0["id"] as? String == seed.keyType }?["expires_from"] as? String == "first_activation")
            let minted = try await client.admin(.get, "\(Self.base)/\(seed.licenseId)")
            #expect(minted["expires_at"] is NSNull && minted["updates_until"] is NSNull && minted["starts_on_activation"] as? Bool == true)

            // Redeemed 100 days after it was sold: the year starts now.
            harness.clock.advance(by: 100 * 86_400)
            let activatedAt = harness.clock.unixSeconds
            let activated = try await client.activate(seed)
            #expect(activated.status == .ok, "\(activated.text)")
            let lease = try #require(activated.lease)
            #expect(lease.entitlements.contains("updates-until:\(activatedAt + 180 * 86_400)"))
            let dated = try await client.admin(.get, "\(Self.base)/\(seed.licenseId)")
            #expect(dated["expires_at"] as? Int64 == activatedAt + 365 * 86_400)
            #expect(dated["updates_until"] as? Int64 == activatedAt + 180 * 86_400)
            #expect(dated["starts_on_activation"] as? Bool == false)
            // A second device does not move the dates.
            harness.clock.advance(by: 86_400)
            #expect(try await client.activate(seed, machine: "another").status == .ok)
            #expect(try await client.admin(.get, "\(Self.base)/\(seed.licenseId)")["expires_at"] as? Int64 == activatedAt + 365 * 86_400)

            // Explicit dates at minting date the license at once; a lifetime key type cannot start on activation.
            let explicit = try await client.admin(.post, Self.base, ["key_type_id": seed.keyType, "expires_at": 1_900_000_000])
            #expect(explicit["starts_on_activation"] as? Bool == false && explicit["expires_at"] as? Int64 == 1_900_000_000)
            let lifetime = try await client.admin(.post, "/tenants/acme/products/app/key-types", [
                "id": "forever", "display_name": "Forever", "activation_limit": 1, "fallback_access": false, "entitlements": [String](), "expires_from": "first_activation",
            ])
            #expect(lifetime.status == .badRequest && lifetime.text.contains("first_activation"))
            #expect(try await client.admin(.post, "/tenants/acme/products/app/key-types", [
                "id": "odd", "display_name": "Odd", "activation_limit": 1, "fallback_access": false, "entitlements": [String](), "expires_from": "later",
            ]).status == .badRequest)
        }
    }

    @Test func aRetriedPatchWithTheSameIdempotencyKeyIsReplayed() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            var headers: HTTPFields = [.contentType: "application/json", .authorization: "Bearer \(Harness.adminToken)"]
            headers[.init("Idempotency-Key")!] = "edit-1"
            let path = "/admin/v1\(Self.base)/\(seed.licenseId)"
            let first = try await client.request(.patch, path, headers: headers, body: #"{"activation_limit": 9}"#)
            let second = try await client.request(.patch, path, headers: headers, body: #"{"activation_limit": 9}"#)
            #expect(first.status == .ok && second.status == .ok && second.headers[.init("Idempotent-Replayed")!] == "true")
            let other = try await client.request(.patch, path, headers: headers, body: #"{"activation_limit": 8}"#)
            #expect(other.status == .unprocessableContent && other.code == "IDEMPOTENCY_MISMATCH")
        }
    }

    @Test func aLicenseActivatedOfflineFirstIsDatedByThatActivation() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed(durationDays: 30, keyTypeFields: ["expires_from": "first_activation"])
            harness.clock.advance(by: 5 * 86_400)
            let reply = try await client.sdk("offline/activate", ["license_key": seed.licenseKey, "request": SeatsAndOfflineTests.request(device: .init())], seed: seed)
            #expect(reply.status == .ok, "\(reply.text)")
            let dated = try await client.admin(.get, "\(Self.base)/\(seed.licenseId)")
            #expect(dated["expires_at"] as? Int64 == harness.clock.unixSeconds + 30 * 86_400 && dated["starts_on_activation"] as? Bool == false)
        }
    }

    @Test func aDateGivenBeforeTheFirstActivationStandsAndAStaleDashboardFormIsRefused() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed(durationDays: 30, keyTypeFields: ["expires_from": "first_activation", "updates_days": 90])
            #expect(try await Self.patch(client, seed.licenseId, ["updates_until": 1_900_000_000]).status == .ok)
            #expect(try await client.activate(seed).status == .ok)
            let dated = try await client.admin(.get, "\(Self.base)/\(seed.licenseId)")
            #expect(dated["updates_until"] as? Int64 == 1_900_000_000 && dated["expires_at"] as? Int64 == harness.clock.unixSeconds + 30 * 86_400)

            // The dashboard's form carries the license's updated_at: saved over a newer license, it is refused.
            let license = try #require(try await client.database.license(id: seed.licenseId))
            let stale = try JSONDecoder().decode(LicenseEditForm.self, from: Data(#"{"updated_at":"\#(license.updatedAt - 1)","note":"x","key_type_id":"\#(seed.keyType)"}"#.utf8))
            #expect(throws: APIError.self) { try stale.edit(of: license, metadata: [:]) }
            let fresh = try JSONDecoder().decode(LicenseEditForm.self, from: Data(#"{"updated_at":"\#(license.updatedAt)","note":"x","key_type_id":"\#(seed.keyType)","expires_on":"\#(DashboardFormat.day(license.expiresAt!))","updates_until_on":"\#(DashboardFormat.day(license.updatesUntil!))"}"#.utf8))
            let edit = try fresh.edit(of: license, metadata: [:])
            #expect(edit.note == .set("x") && edit.expiresAt == .keep && edit.updatesUntil == .keep)
        }
    }
}
