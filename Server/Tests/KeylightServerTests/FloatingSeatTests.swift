import Crypto
import Foundation
import KeylightCore
import KeylightServerTestSupport
@testable import KeylightServer
import Testing

/// Floating seats over the SDK API: held while the device validates, freed when it goes silent
/// for longer than `heartbeat_seconds` (by the license's next activation or validation, or the sweep).
@Suite(.timeLimit(.minutes(6))) struct FloatingSeatTests {
    static func floating(heartbeat: Int = 30, overage: Double? = nil) -> [String: Any] {
        var fields: [String: Any] = ["floating": true, "heartbeat_seconds": heartbeat]
        if let overage { fields["overage"] = overage }
        return fields
    }

    static func instanceId(_ reply: Reply) throws -> String { try #require(reply["instance_id"] as? String) }

    @Test func aSilentDeviceLosesItsSeatToTheNextOne() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed(limit: 2, keyTypeFields: Self.floating(heartbeat: 30))
            _ = try await WebhookTests.register(client, url: "https://hooks.example.com/k")
            let first = try await client.activate(seed, machine: "m1")
            #expect(first.status == .ok, "\(first.text)")
            #expect(first["heartbeat_seconds"] as? Int == 30 && first["over_limit"] as? Bool == false)
            // The lease lasts one heartbeat: an app that stops validating stops being licensed.
            let lease = try #require(first.lease)
            #expect(lease.expiresAt - lease.issuedAt == 30 && lease.status == .active)
            let second = try await client.activate(seed, machine: "m2")
            #expect(second.status == .ok)
            #expect(try await client.activate(seed, machine: "m3").status == .conflict)

            // m1 keeps validating; m2 goes silent.
            harness.clock.advance(by: 20)
            let renewed = try await client.validate(seed, instance: try Self.instanceId(first))
            #expect(renewed.status == .ok && renewed["valid"] as? Bool == true && renewed["heartbeat_seconds"] as? Int == 30)
            let renewedLease = try #require(renewed.lease)
            #expect(renewedLease.expiresAt - renewedLease.issuedAt == 30)
            // The admin API shows each seat's deadline: the renewed one a heartbeat from now, the silent one as it was.
            let shown = try #require(try await client.admin(.get, "/tenants/acme/products/app/licenses/\(seed.licenseId)")["instances"] as? [[String: Any]])
            let deadlines = Dictionary(uniqueKeysWithValues: shown.map { ($0["instance_id"] as? String ?? "", $0["seat_expires_at"] as? Int64) })
            #expect(deadlines[try Self.instanceId(first)] == harness.clock.unixSeconds + 30)
            #expect(deadlines[try Self.instanceId(second)] == harness.clock.unixSeconds + 10)
            harness.clock.advance(by: 15)
            // m2 was silent for 35 s > 30 s: the next device takes its seat at once (no sweep ran).
            let third = try await client.activate(seed, machine: "m3")
            #expect(third.status == .ok, "\(third.text)")
            let late = try await client.validate(seed, instance: try Self.instanceId(second))
            #expect(late.status == .unprocessableContent && late.code == "INSTANCE_INACTIVE")
            // m1 validated 15 s ago: still holds its seat.
            #expect(try await client.validate(seed, instance: try Self.instanceId(first)).status == .ok)
            #expect(try await client.count("SELECT active_instances AS n FROM licenses") == 2)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE active") == 2)

            let expired = try await WebhookTests.outbox(client).filter { $0["type"] as? String == "instance.expired" }
            #expect(expired.count == 1)
            let data = try #require(expired.first?["data"] as? [String: Any])
            #expect((data["instance"] as? [String: Any])?["id"] as? String == (try Self.instanceId(second)))
            #expect(data["how"] as? String == "heartbeat_missed" && data["source"] as? String == "system")
            let audit = try await client.database.auditLog(tenantId: "acme", limit: 20).filter { $0.action == "instance.expire" }
            #expect(audit.count == 1 && audit.first?.actor == "system")
        }
    }

    @Test func theSweepFreesDeadSeatsOnlyOnceAndLeavesOthersAlone() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed(limit: 5, keyTypeFields: Self.floating(heartbeat: 60))
            let fixed = try await client.seed(limit: 5)
            for machine in ["a", "b", "c"] { #expect(try await client.activate(seed, machine: machine).status == .ok) }
            #expect(try await client.activate(fixed, machine: "fixed").status == .ok)
            let database = client.database
            let now = harness.clock.unixSeconds
            // A deadline is inclusive of its last second: nothing is freed one second early.
            #expect(try await database.expireFloatingSeats(now: now + 59) == 0)
            #expect(try await database.expireFloatingSeats(now: now + 60) == 3)
            #expect(try await database.expireFloatingSeats(now: now + 60) == 0)
            #expect(try await client.count("SELECT active_instances AS n FROM licenses WHERE id = '\(seed.licenseId)'") == 0)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE seat_expires_at IS NOT NULL") == 0)
            // The node-locked seat never has a deadline.
            #expect(try await client.count("SELECT active_instances AS n FROM licenses WHERE id = '\(fixed.licenseId)'") == 1)
            #expect(try await database.expireFloatingSeats(now: 1 << 40) == 0)
        }
    }

    @Test func thePeriodicSweepRunsOnItsOwn() async throws {
        var harness = Harness()
        harness.configuration.seatSweepInterval = .milliseconds(50)
        let clock = harness.clock
        try await harness.run { client in
            let seed = try await client.seed(limit: 2, keyTypeFields: Self.floating(heartbeat: 10))
            #expect(try await client.activate(seed, machine: "m1").status == .ok)
            #expect(try await client.activate(seed, machine: "m2").status == .ok)
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await client.count("SELECT active_instances AS n FROM licenses") == 2)
            clock.advance(by: 11)
            #expect(try await eventually { try await client.count("SELECT active_instances AS n FROM licenses") == 0 })
            let metrics = try await client.request(.get, "/metrics").text
            #expect(metrics.contains(#"keylight_floating_seats_total{result="expired"} 2"#), "\(metrics.split(separator: "\n").filter { $0.contains("floating") })")
        }
    }

    @Test func theSameMachineKeepsItsSeatUntilItGoesSilent() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed(limit: 1, keyTypeFields: Self.floating(heartbeat: 30))
            let first = try Self.instanceId(try await client.activate(seed, machine: "m1"))
            harness.clock.advance(by: 25)
            // Activating again while the seat lives: the same seat, its deadline moved.
            #expect(try Self.instanceId(try await client.activate(seed, machine: "m1")) == first)
            harness.clock.advance(by: 25)
            #expect(try await client.validate(seed, instance: first).status == .ok)
            harness.clock.advance(by: 31)
            // Silent too long: a new seat (the old instance is over), and the old id is refused.
            let second = try Self.instanceId(try await client.activate(seed, machine: "m1"))
            #expect(second != first)
            #expect(try await client.validate(seed, instance: first).code == "INSTANCE_INACTIVE")
            #expect(try await client.count("SELECT active_instances AS n FROM licenses") == 1)
            // Quitting gives the seat back at once.
            #expect(try await client.sdk("deactivate", ["license_key": seed.licenseKey, "instance_id": second], seed: seed).status == .ok)
            #expect(try await client.activate(seed, machine: "m2").status == .ok)
        }
    }

    @Test func overageAllowsSeatsPastTheLimitAndSaysSo() async throws {
        let harness = Harness()
        try await harness.run { client in
            // 4 seats and 25 %: a fifth device is let in and told it is over the limit; a sixth is not.
            let seed = try await client.seed(limit: 4, keyTypeFields: Self.floating(heartbeat: 600, overage: 0.25))
            var ids: [String] = []
            for index in 1...4 {
                let reply = try await client.activate(seed, machine: "m\(index)")
                #expect(reply.status == .ok && reply["over_limit"] as? Bool == false)
                ids.append(try Self.instanceId(reply))
            }
            let fifth = try await client.activate(seed, machine: "m5")
            #expect(fifth.status == .ok && fifth["over_limit"] as? Bool == true)
            let sixth = try await client.activate(seed, machine: "m6")
            #expect(sixth.status == .conflict && sixth.code == "ACTIVATION_LIMIT_REACHED")
            #expect(try await client.validate(seed, instance: ids[0])["over_limit"] as? Bool == true)
            #expect(try await client.sdk("deactivate", ["license_key": seed.licenseKey, "instance_id": ids[1]], seed: seed).status == .ok)
            #expect(try await client.validate(seed, instance: ids[0])["over_limit"] as? Bool == false)

            // Overage works for seats that do not float too; without either, answers stay as they were.
            let fixed = try await client.seed(limit: 1, keyTypeFields: ["overage": 1.0])
            let one = try await client.activate(fixed, machine: "x1")
            #expect(one["over_limit"] as? Bool == false && one["heartbeat_seconds"] == nil)
            #expect(try await client.activate(fixed, machine: "x2")["over_limit"] as? Bool == true)
            #expect(try await client.activate(fixed, machine: "x3").status == .conflict)
            let plain = try await client.seed(limit: 1)
            let reply = try await client.activate(plain, machine: "p1")
            #expect(reply.status == .ok && reply["over_limit"] == nil && reply["heartbeat_seconds"] == nil)
            let plainLease = try #require(reply.lease)
            #expect(plainLease.expiresAt - plainLease.issuedAt == 7 * 86_400)
        }
    }

    @Test func keyTypeFieldsAreCheckedAndShown() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            for (fields, message) in [
                (["heartbeat_seconds": 9], "heartbeat_seconds"), (["heartbeat_seconds": 86_401], "heartbeat_seconds"),
                (["overage": 1.5], "overage"), (["overage": -0.1], "overage"), (["overage": 0.125], "overage"),
                (["updates_days": 0], "updates_days"), (["updates_days": 36_501], "updates_days"),
                (["entitlements": ["pro", "updates-until:1"]], "reserved"),
            ] as [([String: Any], String)] {
                var body: [String: Any] = ["id": "bad", "display_name": "Bad", "activation_limit": 1, "fallback_access": false, "entitlements": ["pro"]]
                body.merge(fields) { $1 }
                let reply = try await client.admin(.post, "/tenants/acme/products/app/key-types", body)
                #expect(reply.status == .badRequest && reply.code == "INVALID_REQUEST" && reply.text.contains(message), "\(fields): \(reply.text)")
            }
            #expect(try await client.count("SELECT COUNT(*) AS n FROM key_types WHERE id = 'bad'") == 0)
            let created = try await client.admin(.post, "/tenants/acme/products/app/key-types", [
                "id": "site", "display_name": "Site", "activation_limit": 5, "fallback_access": false, "entitlements": ["pro"],
                "floating": true, "overage": 0.2, "updates_days": 365,
            ])
            #expect(created.status == .created, "\(created.text)")
            #expect(created["floating"] as? Bool == true && created["heartbeat_seconds"] as? Int == 600)
            #expect(created["overage"] as? Double == 0.2 && created["updates_days"] as? Int == 365)
            let plain = try await client.admin(.post, "/tenants/acme/products/app/key-types", [
                "id": "plain", "display_name": "Plain", "activation_limit": 5, "fallback_access": false, "entitlements": ["pro"],
            ])
            #expect(plain["floating"] as? Bool == false && plain["overage"] as? Double == 0 && plain["updates_days"] is NSNull)
        }
    }

    @Test func aFloatingLicenseCannotBeActivatedOffline() async throws {
        try await Harness().run { client in
            let seed = try await client.seed(limit: 2, keyTypeFields: Self.floating())
            let reply = try await client.sdk("offline/activate", [
                "license_key": seed.licenseKey, "request": SeatsAndOfflineTests.request(device: Curve25519.Signing.PrivateKey()),
            ], seed: seed)
            #expect(reply.status == .unprocessableContent && reply.code == "OFFLINE_NOT_ALLOWED", "\(reply.text)")
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances") == 0)
            #expect(try await client.count("SELECT active_instances AS n FROM licenses") == 0)
        }
    }
}
