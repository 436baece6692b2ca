import Crypto
import Foundation
import KeylightTestSupport
import KeylightServerTestSupport
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import SQLKit
import Testing

/// The dashboard's pages and forms, signed in: the catalog, licenses (search, actions, CSV),
/// signing keys, the audit log and charts, and what a database outage looks like.
@Suite(.timeLimit(.minutes(6))) struct DashboardPageTests {
    @Test func catalogPagesAndForms() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            try await DashboardTests.user(client)
            let browser = DashboardBrowser(client)
            try await browser.signIn(DashboardTests.email, DashboardTests.password)

            #expect(try await browser.post("/dashboard/tenants", [("id", "north"), ("name", "North & Co")]).location == "/dashboard/t/north")
            let tenant = try await browser.get("/dashboard/t/north")
            #expect(tenant.status == .ok && tenant.text.contains("Tenant North &amp; Co created."))
            #expect(!(try await browser.get("/dashboard/t/north")).text.contains("created."))  // a flash shows once
            let duplicate = try await browser.post("/dashboard/tenants", [("id", "north"), ("name", "Again")])
            #expect(duplicate.location == "/dashboard")
            #expect(try await browser.get("/dashboard").text.contains("Tenant north already exists."))

            // A product: its SDK key is shown on the creation page only, with a snippet that works.
            let created = try await browser.post("/dashboard/t/north/products", [
                ("id", "notes"), ("name", "Notes"), ("key_prefix", "note"), ("trial_duration_days", "21"), ("free_tier_enabled", "on"),
            ])
            #expect(created.status == .ok)
            let sdkKey = try #require(created.text.firstMatch(of: /kl_sdk_[A-Za-z0-9_-]+/).map { String($0.output) })
            let product = try #require(try await client.database.product(tenantId: "north", id: "notes"))
            #expect(product.keyPrefix == "NOTE" && product.trialDurationDays == 21 && product.freeTierEnabled)
            #expect(product.sdkKeyHash == Hex.encode(SHA256Digest(sdkKey)))
            let kid = client.server.keyRing.current["north"]!.active.kid
            #expect(created.text.contains("tenant: &quot;north&quot;, product: &quot;notes&quot;") && created.text.contains(kid))
            let page = try await browser.get("/dashboard/t/north/p/notes")
            #expect(page.status == .ok && !page.text.contains(sdkKey) && page.text.contains("<svg class=\"chart statuses\""))
            let bad = try await browser.post("/dashboard/t/north/products", [("id", "Bad Id"), ("name", "x"), ("key_prefix", "ABCD")])
            #expect(bad.location == "/dashboard/t/north")
            #expect(try await browser.get("/dashboard/t/north").text.contains("must match"))

            // Edit the product; create key types; set a Stripe price.
            #expect(try await browser.post("/dashboard/t/north/p/notes", [("name", "Notes Pro"), ("trial_duration_days", "7")]).status == .seeOther)
            let edited = try #require(try await client.database.product(tenantId: "north", id: "notes"))
            #expect(edited.name == "Notes Pro" && edited.trialDurationDays == 7 && !edited.freeTierEnabled)  // unticked box = off
            _ = try await browser.post("/dashboard/t/north/p/notes/key-types", [
                ("id", "team"), ("display_name", "Team"), ("activation_limit", "5"), ("duration_days", "365"),
                ("entitlements", "pro, sync"), ("lease_ttl_days", "3"), ("fallback_access", "on"), ("stripe_price_id", "price_team"),
            ])
            let keyType = try #require(try await client.database.keyType(tenantId: "north", productId: "notes", id: "team"))
            #expect(keyType.activationLimit == 5 && keyType.durationDays == 365 && keyType.fallbackAccess && keyType.entitlementCodes == ["pro", "sync"])
            #expect(keyType.leaseTtlSeconds == 3 * 86_400 && keyType.stripePriceId == "price_team")
            _ = try await browser.post("/dashboard/t/north/p/notes/key-types/team/stripe", [("stripe_price_id", "price_yearly"), ("stripe_mode", "subscription")])
            let priced = try #require(try await client.database.keyType(tenantId: "north", productId: "notes", id: "team"))
            #expect(priced.stripePriceId == "price_yearly" && priced.stripeMode == "subscription")
            let productPage = try await browser.get("/dashboard/t/north/p/notes")
            #expect(productPage.text.contains("Team") && productPage.text.contains("365 days") && productPage.text.contains("value=\"price_yearly\""))

            // Stripe settings, the checkout key (once) and a webhook endpoint (secret once).
            #expect(try await browser.post("/dashboard/t/north/stripe", [("webhook_secret", "whsec_abc"), ("secret_key", "sk_test_abc")]).status == .seeOther)
            let stripe = try #require(try await client.database.stripeSettings(tenantId: "north"))
            #expect(stripe.sealedSecretKey != nil && !stripe.sealedWebhookSecret.contains("whsec_abc"))
            let tenantPage = try await browser.get("/dashboard/t/north")
            #expect(tenantPage.text.contains("with a secret key") && !tenantPage.text.contains("whsec_abc") && !tenantPage.text.contains("sk_test_abc"))
            let keyPage = try await browser.post("/dashboard/t/north/checkout-key")
            let checkoutKey = try #require(keyPage.text.firstMatch(of: /kl_checkout_[A-Za-z0-9_-]+/).map { String($0.output) })
            #expect(!(try await browser.get("/dashboard/t/north")).text.contains(checkoutKey))
            let hookPage = try await browser.post("/dashboard/t/north/webhooks", [("url", "https://hooks.example.com/k"), ("events[]", "license.created"), ("events[]", "license.revoked")])
            #expect(hookPage.text.contains("whsec_"))
            let endpoints = try await client.database.webhookEndpoints(tenantId: "north")
            #expect(endpoints.count == 1 && endpoints[0].eventTypes == [.licenseCreated, .licenseRevoked])
            _ = try await browser.post("/dashboard/t/north/webhooks/\(endpoints[0].id)/disable")
            #expect(try await client.database.webhookEndpoint(tenantId: "north", id: endpoints[0].id)?.enabled == false)
            _ = try await browser.post("/dashboard/t/north/webhooks/\(endpoints[0].id)/delete")
            #expect(try await client.database.webhookEndpoints(tenantId: "north").isEmpty)

            // Every change above is in the audit log under the user's name.
            let entries = try await client.database.auditLog(tenantId: "north", limit: 100)
            #expect(Set(entries.map(\.actor)) == ["user:\(DashboardTests.email)"])
            #expect(Set(entries.map(\.action)).isSuperset(of: [
                "tenant.create", "product.create", "product.update", "key_type.create", "key_type.update", "stripe.configure",
                "checkout_key.rotate", "webhook_endpoint.create", "webhook_endpoint.disable", "webhook_endpoint.delete",
            ]))
            #expect(try await browser.get("/dashboard/t/nowhere").status == .notFound)
            #expect(try await browser.get("/dashboard/t/north/p/nothing").status == .notFound)
        }
    }

    @Test func licensePagesSearchActionsAndCSV() async throws {
        try await Harness().run { client in
            let (browser, seed) = try await DashboardTests.signedIn(client)
            // Mint through the form: the raw key is on that page only.
            let minted = try await browser.post("/dashboard/t/acme/p/app/licenses", [("key_type_id", seed.keyType), ("customer_email", "Ada@Example.com")])
            #expect(minted.status == .ok)
            let key = try #require(minted.text.firstMatch(of: /ACME(?:-[0-9A-Z]{4}){4}/).map { String($0.output) })
            #expect(minted.text.contains("<div class=\"qr\"") && minted.text.contains("aria-label=\"QR code\""))  // the key for a phone camera
            let license = try #require(try await client.database.license(keyHash: try LicenseKey(key).keyHash))
            #expect(license.customerEmail == "ada@example.com")
            let page = "/dashboard/t/acme/p/app/licenses/\(license.id)"
            #expect(!(try await browser.get(page)).text.contains(key))
            #expect((try await browser.get(page)).text.contains(license.maskedKey))

            // Search by email, key suffix and status; paginate.
            for _ in 0..<55 { _ = try await client.mint(seed) }
            let byEmail = try await browser.get("/dashboard/t/acme/p/app/licenses?email=ada%40example.com")
            #expect(byEmail.text.contains(license.maskedKey) && byEmail.text.components(separatedBy: "<tr><td><a href").count == 2)
            let suffix = String(key.suffix(4))
            #expect(try await browser.get("/dashboard/t/acme/p/app/licenses?key_suffix=\(suffix.lowercased())").text.contains(license.maskedKey))
            let all = try await browser.get("/dashboard/t/acme/p/app/licenses")
            #expect(all.text.components(separatedBy: "<tr><td><a href").count == 51)
            let next = try #require(all.text.firstMatch(of: /href="([^"]*cursor=[^"]*)"/).map { String($0.output.1) })
            let second = try await browser.get(next.replacingOccurrences(of: "&amp;", with: "&"))
            #expect(second.status == .ok && second.text.components(separatedBy: "<tr><td><a href").count == 8)  // 57 licenses in all
            #expect(try await browser.get("/dashboard/t/acme/p/app/licenses?status=bogus").status == .badRequest)

            // Revoke, see it in the list's status filter and the audit log; suspend/reinstate; remint.
            #expect(try await browser.post(page + "/revoke").location == page)
            #expect(try await client.database.license(tenantId: "acme", productId: "app", id: license.id)?.status == .revoked)
            #expect((try await browser.get(page)).text.contains("License revoked."))
            #expect(try await browser.get("/dashboard/t/acme/p/app/licenses?status=revoked").text.contains(license.maskedKey))
            let audit = try await browser.get("/dashboard/audit")
            #expect(audit.text.contains("license.revoke") && audit.text.contains("user:\(DashboardTests.email)"))
            _ = try await browser.post(page + "/reinstate")
            _ = try await browser.post(page + "/suspend")
            #expect(try await client.database.license(tenantId: "acme", productId: "app", id: license.id)?.status == .suspended)
            _ = try await browser.post(page + "/reinstate")
            let reminted = try await browser.post(page + "/remint")
            let newKey = try #require(reminted.text.firstMatch(of: /ACME(?:-[0-9A-Z]{4}){4}/).map { String($0.output) })
            #expect(newKey != key && reminted.text.contains("the old key no longer works"))

            // A device: activated over the SDK, listed with its last-seen time, deactivated here.
            let activation = try await client.activate(seed, key: newKey, machine: "m-9", name: "Ada's Mac")
            let instance = try #require(activation["instance_id"] as? String)
            let detail = try await browser.get(page)
            #expect(detail.text.contains("Ada&#39;s Mac") && detail.text.contains("Devices (1 active)"))
            #expect(try await browser.post(page + "/instances/\(instance)/deactivate").location == page)
            #expect(try await client.database.instance(id: instance)?.active == false)
            #expect(try await browser.post(page + "/instances/nope/deactivate").status == .notFound)

            // CSV: every license, masked, with formula-looking cells defused.
            _ = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType, "customer_email": "=cmd@example.com"])
            let csv = try await browser.get("/dashboard/t/acme/p/app/licenses.csv")
            #expect(csv.status == .ok && csv.headers[.contentType]?.hasPrefix("text/csv") == true)
            #expect(csv.headers[.contentDisposition]?.contains("acme-app-licenses.csv") == true)
            let lines = csv.text.split(separator: "\r\n")
            #expect(lines.first == "id,masked_key,status,expired,customer_email,key_type_id,expires_at,active_instances,created_at")
            #expect(lines.count == 1 + 58)
            let current = try #require(try await client.database.license(tenantId: "acme", productId: "app", id: license.id))
            #expect(current.maskedKey != license.maskedKey)  // reminted
            #expect(!csv.text.contains(newKey) && !csv.text.contains(key) && csv.text.contains(current.maskedKey))
            #expect(csv.text.contains(",'=cmd@example.com,"))
            let filtered = try await browser.get("/dashboard/t/acme/p/app/licenses.csv?email=ada%40example.com")
            #expect(filtered.text.split(separator: "\r\n").count == 2)
        }
    }

    @Test func signingKeysAuditAndCharts() async throws {
        try await Harness().run { client in
            let (browser, seed) = try await DashboardTests.signedIn(client)
            let first = client.server.keyRing.current["acme"]!.active.kid
            #expect(try await browser.get("/dashboard/signing-keys").text.contains(first))
            // Staged: prepare shows the next key in the snippet to ship, rotate promotes it.
            _ = try await browser.post("/dashboard/t/acme/signing-keys/prepare")
            let next = try #require(client.server.keyRing.current["acme"]?.next)
            let prepared = try await browser.get("/dashboard/signing-keys")
            #expect(prepared.text.contains("is published as next") && prepared.text.contains("Rotate to \(next.kid)"))
            // The Info.plist entry the next build ships: the active key, and the next one marked.
            let active = client.server.keyRing.current["acme"]!.active.publicKey.rawRepresentation.base64EncodedString()
            #expect(prepared.text.contains("&lt;key&gt;KeylightPublicKeys&lt;/key&gt;"))
            #expect(prepared.text.contains("&lt;string&gt;\(active)&lt;/string&gt;"))
            #expect(prepared.text.contains("&lt;string&gt;\(next.publicKey)&lt;/string&gt; &lt;!-- next: signs after the next rotation --&gt;"))
            #expect(!prepared.text.contains("rawRepresentation"))
            let product = try await browser.get("/dashboard/t/acme/p/app")
            #expect(product.text.contains(next.publicKey) && product.text.contains(first))
            _ = try await browser.post("/dashboard/t/acme/signing-keys/rotate")
            let second = client.server.keyRing.current["acme"]!.active.kid
            #expect(second == next.kid)
            let keys = try await browser.get("/dashboard/signing-keys")
            #expect(keys.text.contains("is active") && keys.text.contains("/dashboard/t/acme/signing-keys/\(first)/retire"))
            _ = try await browser.post("/dashboard/t/acme/signing-keys/\(first)/retire")
            #expect(!client.server.keyRing.current["acme"]!.keyset.keys.keys.contains(first))
            _ = try await browser.post("/dashboard/t/acme/signing-keys/\(second)/retire")
            #expect(try await browser.get("/dashboard/signing-keys").text.contains("rotate first"))
            // The server-wide button rotates every tenant.
            _ = try await browser.post("/dashboard/signing-keys/rotate")
            #expect(client.server.keyRing.current["acme"]!.active.kid != second)

            // Two activations and three validations today, one activation yesterday: the charts count them.
            client.clock.advance(by: -86_400)
            let yesterday = try #require(try await client.activate(seed, machine: "y")["instance_id"] as? String)
            client.clock.advance(by: 86_400)
            let instance = try #require(try await client.activate(seed, machine: "a")["instance_id"] as? String)
            _ = try await client.activate(seed, machine: "b")
            for _ in 0..<3 { #expect(try await client.validate(seed, instance: instance).status == .ok) }
            _ = yesterday
            // The write-behind flush runs every 50 ms in tests: poll for it.
            let today = client.clock.unixSeconds.flooringDivided(by: 86_400)
            #expect(try await eventually {
                try await client.database.usage(tenantId: "acme", productId: "app", lastDay: today, days: 30).last?.count == UsageCount(activations: 2, validations: 3)
            })
            let usage = try await client.database.usage(tenantId: "acme", productId: "app", lastDay: today, days: 30)
            #expect(usage.count == 30 && usage.last?.count == UsageCount(activations: 2, validations: 3) && usage[28].count.activations == 1)
            let home = try await browser.get("/dashboard")
            #expect(home.text.contains("Activations per day: 3 in 30 days") && home.text.contains("Validations per day: 3 in 30 days"))
            #expect(home.text.contains("<title>\(DashboardFormat.shortDay(today)): 2</title>"))
            #expect(home.text.contains("Licenses: 1 active, 0 expired, 0 suspended, 0 revoked"))

            let audit = try await browser.get("/dashboard/audit")
            // This user's own actions, counted: the tenant's rotate and the server-wide one.
            let mine = try await client.database.auditLog(limit: 500).filter { $0.actor == "user:\(DashboardTests.email)" }.map(\.action)
            #expect(mine.filter { $0 == "signing_key.rotate" }.count == 2 && mine.contains("signing_key.prepare"), "\(mine)")
            #expect(audit.text.contains("signing_key.rotate"))
            #expect(audit.text.contains("signing_key.retire"))
            #expect(try await browser.get("/dashboard/audit?cursor=abc").status == .badRequest)
        }
    }

    @Test func theCSVIsStreamedPageByPageAndHoldsEveryLicense() async throws {
        try await Harness().run(.live) { client in
            let (browser, seed) = try await DashboardTests.signedIn(client)
            let now = client.clock.unixSeconds
            let imported = try (0..<1_234).map { index in
                let key = try LicenseKey.generate(prefix: "ACME")
                return License(id: String(format: "imp-%05d", index), tenantId: "acme", productId: "app", keyTypeId: seed.keyType, keyHash: key.keyHash,
                               maskedKey: key.masked, status: .active, expiresAt: nil, customerEmail: "bulk@example.com", activeInstances: 0, createdAt: now, updatedAt: now)
            }
            try await client.database.importLicenses(imported)
            let csv = try await browser.get("/dashboard/t/acme/p/app/licenses.csv")
            #expect(csv.status == .ok)
            // Written as it is read (chunked), not built whole with a length up front.
            #expect(csv.headers[.contentLength] == nil && csv.headers[.transferEncoding] == "chunked", "\(csv.headers)")
            let lines = csv.text.split(separator: "\r\n")
            #expect(lines.count == 1 + 1_234 + 1, "three pages of 500 and the seed's license")
            let ids = lines.dropFirst().map { $0.split(separator: ",")[0] }
            #expect(Set(ids).count == ids.count, "no license twice across page boundaries")
            #expect(ids.contains("imp-00000") && ids.contains("imp-01233") && ids.contains(Substring(seed.licenseId)))
            // A filter still applies on every page.
            let filtered = try await browser.get("/dashboard/t/acme/p/app/licenses.csv?email=bulk%40example.com")
            #expect(filtered.text.split(separator: "\r\n").count == 1 + 1_234)
            // A bad filter is an error page before any CSV is sent.
            let bad = try await browser.get("/dashboard/t/acme/p/app/licenses.csv?status=bogus")
            #expect(bad.status == .badRequest && bad.headers[.contentType]?.hasPrefix("text/html") == true)
        }
    }

    @Test func anUnreadableDatabaseIsThe503PageNotASignInLoop() async throws {
        try await Harness().run { client in
            let (browser, _) = try await DashboardTests.signedIn(client)
            await client.database.close()
            for path in ["/dashboard", "/dashboard/t/acme", "/dashboard/t/acme/p/app/licenses", "/dashboard/t/acme/p/app/licenses.csv", "/dashboard/audit"] {
                let page = try await browser.get(path)
                #expect(page.status == .serviceUnavailable, "\(path): \(page.status) \(page.location ?? "")")
                #expect(page.headers[.retryAfter] == "1" && page.headers[.contentType]?.hasPrefix("text/html") == true, "\(path)")
                #expect(page.text.contains("The database is unavailable"), "\(path)")
            }
            #expect(try await browser.post("/dashboard/tenants", [("id", "t2"), ("name", "Two")]).status == .serviceUnavailable)
            // Without a session cookie there is nothing to look up: the sign-in page as ever,
            // and signing in there is the same 503 page, leading back to the form.
            #expect(try await client.request(.get, "/dashboard").location?.hasPrefix("/dashboard/login") == true)
            let stranger = DashboardBrowser(client)
            let signIn = try await stranger.signIn(DashboardTests.email, DashboardTests.password)
            #expect(signIn.status == .serviceUnavailable && signIn.headers[.retryAfter] == "1", "\(signIn.status)")
            #expect(signIn.text.contains("The database is unavailable") && signIn.text.contains("href=\"/dashboard/login\""))
        }
    }

    @Test func aFormWhoseWriteCannotGetTheDatabaseIsThe503PageAndChangesNothing() async throws {
        let directory = try temporaryDirectory("dashboard-busy")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("keylight.db").path
        try await Harness(databasePath: path).run { client in
            let (browser, _) = try await DashboardTests.signedIn(client)
            _ = try await browser.get("/dashboard")
            // Another process holds SQLite's write lock past the server's busy timeout (5 s);
            // reads (the session) still work, so the failure is the handler's own write.
            let other = try await Database.sqlite(path: path, logger: Harness.logger)
            let (release, releaser) = AsyncStream<Void>.makeStream()
            let (locked, lockedSignal) = AsyncStream<Void>.makeStream()
            let holder = Task {
                try await other.write { sql in
                    try await sql.raw("UPDATE tenants SET name = name").run()
                    lockedSignal.yield()
                    for await _ in release { break }
                }
            }
            for await _ in locked { break }
            let reply = try await browser.post("/dashboard/tenants", [("id", "t2"), ("name", "Two")])
            releaser.finish()
            try await holder.value
            await other.close()
            #expect(reply.status == .serviceUnavailable, "\(reply.status) \(reply.text.prefix(300))")
            #expect(reply.headers[.retryAfter] == "1" && reply.text.contains("The database is unavailable"))
            #expect(try await client.database.tenants().map(\.id) == ["acme"])
            // The lock gone, the same form works.
            #expect(try await browser.post("/dashboard/tenants", [("id", "t2"), ("name", "Two")]).location == "/dashboard/t/t2")
        }
    }

    @Test func chartsAndCSVFieldsAreSafe() {
        #expect(SVGChart.niceCeiling(0) == 0 && SVGChart.niceCeiling(1) == 1 && SVGChart.niceCeiling(3) == 5 && SVGChart.niceCeiling(11) == 20 && SVGChart.niceCeiling(500) == 500 && SVGChart.niceCeiling(501) == 1_000)
        let svg = SVGChart.bars(title: "<script>", values: [0, 4, 2], labels: ["a&b", "b", "c"], cssClass: "x")
        #expect(!svg.contains("<script>") && svg.contains("&lt;script&gt;") && svg.contains("a&amp;b"))
        #expect(svg.components(separatedBy: "<rect class=\"bar\"").count == 4)
        #expect(svg.contains("height=\"99.2\"") && svg.contains(">5</text>"))  // the axis tops at 5 for a peak of 4: 4/5 of 124 px
        #expect(DashboardFormat.csvField("plain") == "plain")
        #expect(DashboardFormat.csvField("a,b") == "\"a,b\"")
        #expect(DashboardFormat.csvField("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(DashboardFormat.csvField("=HYPERLINK(1)") == "'=HYPERLINK(1)")
        #expect(DashboardFormat.csvField("+1") == "'+1" && DashboardFormat.csvField("@x") == "'@x")
        #expect(Int64(-1).flooringDivided(by: 86_400) == -1 && Int64(86_399).flooringDivided(by: 86_400) == 0)
    }
}
