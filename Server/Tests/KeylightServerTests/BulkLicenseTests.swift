import Foundation
import KeylightCore
@testable import KeylightServer
import Testing

/// Bulk license changes (issue 49): a dry run that changes nothing, then a job that is stopped
/// half-way, resumed by two runners at once (as two processes would), and applied exactly once
/// to every license it selected.
@Suite(.timeLimit(.minutes(6))) struct BulkLicenseTests {
    static let base = "/tenants/acme/products/app/licenses"

    @Test(arguments: StorageBackend.available)
    func aDryRunThenAJobStoppedHalfWayAndResumedAppliesOncePerLicense(_ backend: StorageBackend) async throws {
        try await Harness.on(backend).run { client in
            let seed = try await client.seed(limit: 3)
            var pro = [seed.licenseId]
            for _ in 0..<24 { pro.append(try await client.mint(seed).id) }
            let other = try await client.seed(limit: 2)
            let _ = try await WebhookTests.register(client, url: "https://hooks.example.com/in", events: ["license.updated"])
            let request: [String: Any] = ["filter": ["key_type_id": seed.keyType], "change": ["limit_add": 3]]

            var dry = request
            dry["dry_run"] = true
            let preview = try await client.admin(.post, "\(Self.base)/bulk", dry)
            #expect(preview.status == .ok, "\(preview.text)")
            #expect(preview["count"] as? Int == 25 && (preview["ids"] as? [String])?.count == 20)
            #expect((preview["ids"] as? [String]) == Array(pro.sorted().prefix(20)))
            #expect(try await client.count("SELECT COUNT(*) AS n FROM licenses WHERE activation_limit_override IS NOT NULL") == 0)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM bulk_jobs") == 0)

            let started = try await client.admin(.post, "\(Self.base)/bulk", request)
            #expect(started.status == .accepted && started["state"] as? String == "running" && started["total"] as? Int == 25, "\(started.text)")
            let job = try #require(started["id"] as? String)
            // A license minted after the job started is not among those it selected.
            let late = try await client.mint(seed)

            // Stopped after 10 licenses (a process killed half-way leaves exactly this behind).
            let bulk = client.server.admin.bulkJobs
            #expect(await bulk.runPending(batch: 4, maxItems: 10) == 10)
            let halfWay = try await client.admin(.get, "\(Self.base)/bulk/\(job)")
            #expect(halfWay["state"] as? String == "running" && halfWay["done"] as? Int == 10 && halfWay["total"] as? Int == 25, "\(halfWay.text)")

            // Resumed by two runners at once: together they do the other 15, never one twice.
            async let first = bulk.runPending(batch: 3)
            async let second = bulk.runPending(batch: 3)
            let (a, b) = await (first, second)
            #expect(a + b >= 15)
            let finished = try await client.admin(.get, "\(Self.base)/bulk/\(job)")
            #expect(finished["state"] as? String == "done" && finished["done"] as? Int == 25 && finished["updated"] as? Int == 25, "\(finished.text)")
            #expect(await bulk.runPending() == 0)

            for id in pro {
                let license = try await client.admin(.get, "\(Self.base)/\(id)")
                #expect(license["activation_limit"] as? Int == 6 && license["activation_limit_override"] as? Int == 6, "\(id): \(license.text)")
            }
            #expect(try await client.admin(.get, "\(Self.base)/\(late.id)")["activation_limit"] as? Int == 3)
            #expect(try await client.admin(.get, "\(Self.base)/\(other.licenseId)")["activation_limit"] as? Int == 2)
            // One audit entry and one event per license, plus the job's own entry.
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'license.update'") == 25)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'license.bulk'") == 1)
            #expect(try await WebhookTests.outbox(client).filter { $0["type"] as? String == "license.updated" }.count == 25)
        }
    }

    @Test(arguments: StorageBackend.available)
    func filtersChangesAndRefusals(_ backend: StorageBackend) async throws {
        let harness = try await Harness.on(backend)
        try await harness.run { client in
            let now = harness.clock.unixSeconds
            let seed = try await client.seed(entitlements: ["pro"])
            let dated = try await client.mint(seed, expiresAt: now + 86_400)
            let tagged = try await client.mint(seed)
            #expect(try await client.admin(.patch, "\(Self.base)/\(tagged.id)", ["metadata": ["reseller": "bundlehunt"]]).status == .ok)
            #expect(try await client.admin(.post, "\(Self.base)/\(seed.licenseId)/suspend").status == .ok)

            func dryCount(_ filter: [String: Any]) async throws -> Int? {
                let reply = try await client.admin(.post, "\(Self.base)/bulk", ["filter": filter, "change": ["limit_add": 1], "dry_run": true])
                #expect(reply.status == .ok, "\(reply.text)")
                return reply["count"] as? Int
            }
            #expect(try await dryCount([:]) == 3)
            #expect(try await dryCount(["status": "suspended"]) == 1)
            #expect(try await dryCount(["metadata": ["reseller": "bundlehunt"]]) == 1)
            #expect(try await dryCount(["created_after": now + 1]) == 0)
            #expect(try await dryCount(["created_before": now + 1]) == 3)

            // Renewing every license from its expiry: the lifetime ones are refused, by code.
            let renewal = try await client.admin(.post, "\(Self.base)/bulk", [
                "filter": [String: Any](), "change": ["renew": ["days": 30], "entitlements_add": ["bonus"]],
            ])
            let job = try #require(renewal["id"] as? String)
            await client.server.admin.bulkJobs.runPending()
            let status = try await client.admin(.get, "\(Self.base)/bulk/\(job)")
            #expect(status["updated"] as? Int == 1 && (status["refused"] as? [String: Int])?["NOTHING_TO_RENEW"] == 2, "\(status.text)")
            let renewed = try await client.admin(.get, "\(Self.base)/\(dated.id)")
            #expect(renewed["expires_at"] as? Int64 == now + 31 * 86_400 && renewed["entitlements"] as? [String] == ["bonus", "pro"])
            // A refused license is left exactly as it was, add-on included.
            #expect(try await client.admin(.get, "\(Self.base)/\(tagged.id)")["entitlements_added"] as? [String] == [])

            for (body, code) in [
                (["change": ["limit_add": 1]], "INVALID_REQUEST"),
                (["filter": [String: Any]()], "INVALID_REQUEST"),
                (["filter": [String: Any](), "change": [String: Any]()], "INVALID_REQUEST"),
                (["filter": [String: Any](), "change": ["limit_add": 0]], "INVALID_REQUEST"),
                (["filter": [String: Any](), "change": ["limit_add": 1, "activation_limit": 4]], "INVALID_REQUEST"),
                (["filter": ["status": "gone"], "change": ["limit_add": 1]], "INVALID_REQUEST"),
                (["filter": ["colour": "red"], "change": ["limit_add": 1]], "UNKNOWN_FIELD"),
                (["filter": [String: Any](), "change": ["key_type_id": "nope"]], "UNKNOWN_KEY_TYPE"),
            ] as [([String: Any], String)] {
                let reply = try await client.admin(.post, "\(Self.base)/bulk", body)
                #expect(reply.code == code, "\(body): \(reply.text)")
            }
            #expect(try await client.admin(.get, "\(Self.base)/bulk/bulk_nope").status == .notFound)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM bulk_jobs") == 1)
        }
    }
}
