import Foundation
import KeylightCore
@testable import KeylightServer
import Testing

/// "Updates until" licenses on the server: the date is fixed when the license is minted and is
/// signed into every active lease as the entitlement `updates-until:<unix>`.
@Suite(.timeLimit(.minutes(6))) struct UpdatesUntilTests {
    @Test func theDateIsFixedAtMintingAndSignedIntoActiveLeases() async throws {
        let harness = Harness()
        try await harness.run { client in
            let minted = harness.clock.unixSeconds
            let seed = try await client.seed(entitlements: ["pro", "zeta"], keyTypeFields: ["updates_days": 365])
            let until = minted + 365 * 86_400
            let license = try await client.admin(.get, "/tenants/acme/products/app/licenses/\(seed.licenseId)")
            #expect(license["updates_until"] as? Int64 == until)

            let activated = try await client.activate(seed)
            let lease = try #require(activated.lease)
            // Sorted like any other code, between "pro" and "zeta".
            #expect(lease.entitlements == ["pro", "updates-until:\(until)", "zeta"])
            let keyset = try await client.keyset()
            #expect(lease.verify(with: keyset, now: harness.clock.unixSeconds).isTrusted)
            #expect(UpdatesEntitlement.date(in: lease.entitlements) == until)

            // Days later the key type's terms do not move the date: the purchase fixed it.
            harness.clock.advance(by: 10 * 86_400)
            let validated = try await client.validate(seed, instance: try #require(activated["instance_id"] as? String))
            #expect(validated.lease.map { UpdatesEntitlement.date(in: $0.entitlements) } == until)
        }
    }

    @Test func anImportedPurchaseKeepsItsOwnDateAndBadDatesAreRefused() async throws {
        try await Harness().run { client in
            let seed = try await client.seed(keyTypeFields: ["updates_days": 30])
            let imported = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType, "updates_until": 1_700_000_000])
            #expect(imported.status == .created && imported["updates_until"] as? Int64 == 1_700_000_000, "\(imported.text)")
            for bad in [-1, 253_402_300_800] as [Int64] {
                let reply = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType, "updates_until": bad])
                #expect(reply.status == .badRequest && reply.text.contains("updates_until"))
            }
            // A key type without updates_days mints licenses without a date, and leases without the code.
            let plain = try await client.seed()
            #expect(try await client.admin(.get, "/tenants/acme/products/app/licenses/\(plain.licenseId)")["updates_until"] is NSNull)
            let lease = try #require(try await client.activate(plain, machine: "p").lease)
            #expect(lease.entitlements == ["pro", "sync"])
        }
    }

    @Test func aLicenseBoughtThroughStripeGetsItsKeyTypesUpdates() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed(keyTypeFields: ["updates_days": 90])
            #expect(try await client.admin(.put, "/tenants/acme/stripe", ["webhook_secret": StripeWebhookTests.secret]).status == .ok)
            let body = StripeWebhookTests.event("checkout.session.completed", StripeWebhookTests.checkout(seed, subscription: nil))
            let minted = try await StripeWebhookTests.deliver(client, body, signature: StripeWebhookTests.signature(body, at: harness.clock.unixSeconds))
            #expect(minted["outcome"] as? String == "minted", "\(minted.text)")
            let licenses = try await StripeWebhookTests.stripeLicenses(client)
            #expect(licenses.count == 1 && licenses.first?.updatesUntil == harness.clock.unixSeconds + 90 * 86_400)
        }
    }

    @Test func fallbackLeasesCarryNoDate() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed(fallback: true, expiresAt: harness.clock.unixSeconds + 100, keyTypeFields: ["updates_days": 365])
            let activated = try await client.activate(seed)
            #expect(activated.lease.map { UpdatesEntitlement.date(in: $0.entitlements) != nil } == true)
            harness.clock.advance(by: 200)
            let lapsed = try await client.validate(seed, instance: try #require(activated["instance_id"] as? String))
            // Protocol section 1: a fallback lease has no entitlements, the updates code included.
            #expect(lapsed.lease?.status == .fallback && lapsed.lease?.entitlements == [])
        }
    }
}
