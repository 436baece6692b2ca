import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import Logging
import NIOConcurrencyHelpers
import Testing

/// The buyer's account in the portal (issue 49): a sign-in link mailed to the address (once, 15
/// minutes, rate-limited, the same answer for any address), every license of the address, and the
/// hosted clients' upgrade link that trades a key for a session without logging it.
@Suite(.timeLimit(.minutes(6))) struct AccountTests {
    static let base = "/portal/acme/account"

    /// A browser on the account pages: keeps their cookie, reads each page's CSRF token.
    final class Browser: @unchecked Sendable {  // used by one test task at a time
        let client: Client
        var cookie: String?
        var lastPage = ""
        init(_ client: Client) { self.client = client }

        func get(_ path: String = AccountTests.base) async throws -> Reply {
            var headers = HTTPFields()
            if let cookie { headers[.cookie] = cookie }
            return keep(try await client.request(.get, path, headers: headers))
        }

        func post(_ path: String, _ fields: [(String, String)], csrf: String? = nil) async throws -> Reply {
            var headers: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
            if let cookie { headers[.cookie] = cookie }
            let marker = "name=\"_csrf\" value=\""
            let token = csrf ?? lastPage.range(of: marker).map { String(lastPage[$0.upperBound...].prefix { $0 != "\"" }) } ?? ""
            return keep(try await client.request(.post, AccountTests.base + path, headers: headers, body: FormEncoding.encode([("_csrf", token)] + fields)))
        }

        private func keep(_ reply: Reply) -> Reply {
            if let set = reply.headers[.setCookie], let pair = set.split(separator: ";").first { cookie = String(pair) }
            if reply.headers[.contentType]?.hasPrefix("text/html") == true { lastPage = reply.text }
            return reply
        }
    }

    static func harness(limits: ServerLimits = .unlimited) throws -> Harness {
        var harness = try LostKeyTests.harness(limits: limits)
        harness.configuration.publicURL = "https://licenses.acme.example"
        return harness
    }

    /// The sign-in link of the newest mail queued to `address`, as the mail service would render it.
    static func link(_ client: Client, to address: String) async throws -> String? {
        let queued = try await client.database.pendingMails(tenantId: "acme").filter { $0.toAddress == address && $0.kind == .accountLink }
        guard let job = queued.last else { return nil }
        var random = SystemRandomNumberGenerator()
        let mail: MailMessage
        do {
            mail = try await LostKeyTests.composer(client).compose(job, now: client.clock.unixSeconds, random: &random)
        } catch is MailComposer.NothingToSend {
            return nil
        }
        guard let range = mail.text.range(of: "https://licenses.acme.example/portal/acme/account/sign-in?token=") else { return nil }
        return String(mail.text[range.lowerBound...].prefix { !$0.isWhitespace })
    }

    @Test func aMailedLinkSignsInOnceAndListsEveryLicenseOfTheAddress() async throws {
        let harness = try Self.harness()
        try await harness.run { client in
            let seed = try await client.seed(limit: 2)
            let second = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType, "customer_email": "buyer@example.com"])
            let secondKey = try #require(second["license_key"] as? String)
            _ = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType, "customer_email": "other@example.com"])
            let device = try #require(try await client.activate(seed, machine: "m-1", name: "Studio Mac")["instance_id"] as? String)

            let browser = Browser(client)
            let start = try await browser.get()
            #expect(start.text.contains("Mail me a sign-in link"))
            // The tenant's products with a portal, linked.
            #expect(start.text.contains("href=\"/portal/acme/app\""))
            let asked = try await browser.post("/request-link", [("email", "Buyer@Example.com")])
            #expect(asked.status == .seeOther && asked.headers[.location] == Self.base)
            let stranger = Browser(client)
            _ = try await stranger.get()
            let unknown = try await stranger.post("/request-link", [("email", "nobody@example.com")])
            #expect(unknown.status == asked.status && unknown.headers[.location] == asked.headers[.location])
            #expect(try await Self.link(client, to: "nobody@example.com") == nil)  // dropped when due: no licenses

            let link = try #require(try await Self.link(client, to: "buyer@example.com"))
            let path = String(link.dropFirst("https://licenses.acme.example".count))
            // Opening the link (a mail scanner may) signs nobody in: it shows a button.
            let confirm = try await browser.get(path)
            #expect(confirm.status == .ok && confirm.text.contains("id=\"use-link\""))
            #expect(!(try await browser.get()).text.contains("Signed in as"))
            _ = try await browser.get(path)
            let token = String(path.split(separator: "=").last ?? "")
            let signedIn = try await browser.post("/sign-in", [("token", token)])
            #expect(signedIn.status == .seeOther)
            let page = try await browser.get()
            #expect(page.text.contains("Signed in as <b>buyer@example.com</b>"))
            let secondId = try #require(second["id"] as? String)
            #expect(page.text.contains(seed.licenseId) && page.text.contains(secondId))
            #expect(!page.text.contains(seed.licenseKey) && !page.text.contains(secondKey) && !page.text.contains("other@example.com"))
            #expect(page.text.contains("Studio Mac"))

            // Used once: the same link signs no one in again.
            let replay = Browser(client)
            _ = try await replay.get(path)
            let again = try await replay.post("/sign-in", [("token", token)])
            #expect(again.status == .forbidden && again.text.contains("expired or was used"))

            // Frees a device of one of its licenses, and no one else's.
            _ = try await browser.get()
            let freed = try await browser.post("/licenses/\(seed.licenseId)/devices/\(device)/deactivate", [])
            #expect(freed.status == .seeOther)
            #expect(try await client.admin(.get, "/tenants/acme/products/app/licenses/\(seed.licenseId)")["active_instances"] as? Int == 0)
            let others = try await client.admin(.get, "/tenants/acme/products/app/licenses?email=other@example.com")
            let otherId = try #require((others["licenses"] as? [[String: Any]])?.first?["id"] as? String)
            _ = try await browser.get()
            #expect(try await browser.post("/licenses/\(otherId)/devices/x/deactivate", []).status == .notFound)
        }
    }

    @Test func aLinkExpiresAfterFifteenMinutesAndRequestsAreLimited() async throws {
        var limits = ServerLimits.unlimited
        limits.lostKeyPerRecipient = RateLimit(count: 3, perSeconds: 3_600, burst: 3)
        let harness = try Self.harness(limits: limits)
        try await harness.run { client in
            _ = try await client.seed()
            let browser = Browser(client)
            _ = try await browser.get()
            #expect(try await browser.post("/request-link", [("email", "buyer@example.com")]).status == .seeOther)
            let link = try #require(try await Self.link(client, to: "buyer@example.com"))
            harness.clock.advance(by: 15 * 60 + 1)
            let token = String(link.split(separator: "=").last ?? "")
            _ = try await browser.get()
            let late = try await browser.post("/sign-in", [("token", token)])
            #expect(late.status == .forbidden && !late.text.contains("Signed in as"))
            #expect(try await Self.link(client, to: "buyer@example.com") == nil)  // an expired link is not mailed late either
            // The address's budget: three an hour (the one above included), then 429.
            var answers: [HTTPResponse.Status] = []
            for _ in 0..<3 {
                _ = try await browser.get()
                answers.append(try await browser.post("/request-link", [("email", "buyer@example.com")]).status)
            }
            #expect(answers == [.seeOther, .seeOther, .tooManyRequests])
            #expect(try await client.database.pendingMails(tenantId: "acme").filter { $0.kind == .accountLink }.count == 3)
            // Malformed tokens and forms without the page's token change nothing.
            #expect(try await browser.get("\(Self.base)/sign-in?token=short").status == .forbidden)
            #expect(try await browser.post("/sign-in", [("token", String(repeating: "A", count: 43))], csrf: "forged").status == .forbidden)
        }
    }

    @Test func theHostedClientsUpgradeLinkTradesTheKeyForASessionAndNeverLogsIt() async throws {
        let lines = NIOLockedValueBox<[String]>([])
        let key = NIOLockedValueBox("")
        var logger = Logger(label: "account-test") { _ in CapturingLogHandler(lines: lines) }
        logger.logLevel = .trace
        let harness = try Self.harness()
        try await harness.run(logger: logger) { client in
            let seed = try await client.seed()
            key.withLockedValue { $0 = seed.licenseKey }
            #expect(try await client.admin(.put, "/tenants/acme/products/app/key-types/\(seed.keyType)/offers", [
                "renewal": ["price_label": "$19", "paddle_price_id": "pri_01renewalaaaaaaaaaaaaaaaa"],
            ]).status == .ok)
            let browser = Browser(client)
            let traded = try await browser.get("/t/acme/license/\(seed.licenseKey)/upgrade")
            #expect(traded.status == .seeOther && traded.headers[.location] == Self.base)
            #expect(!(traded.headers[.location] ?? "").contains(seed.licenseKey) && !(browser.cookie ?? "").contains(seed.licenseKey))
            let page = try await browser.get()
            #expect(page.text.contains("Opened with your license key") && page.text.contains(seed.licenseId))
            #expect(page.text.contains("Renew · $19"))
            #expect(!page.text.contains(seed.licenseKey))
            // A wrong key: 404, and the key is not echoed.
            let wrong = try await Browser(client).get("/t/acme/license/ACME-AAAA-BBBB-CCCC-DDDD/upgrade")
            #expect(wrong.status == .notFound && !wrong.text.contains("ACME-AAAA-BBBB-CCCC-DDDD"))
            #expect(try await Browser(client).get("/t/nobody/license/\(seed.licenseKey)/upgrade").status == .notFound)
            // "t" is reserved for new tenants, "account" for new products.
            #expect(try await client.admin(.post, "/tenants", ["id": "t", "name": "T"]).status == .badRequest)
            #expect(try await client.admin(.post, "/tenants/acme/products", ["id": "account", "name": "A", "key_prefix": "ACCT"]).status == .badRequest)
        }
        let logged = lines.withLockedValue { $0 }.joined(separator: "\n")
        // The request was logged, by its route; the key never was.
        #expect(logged.contains("/t/{tenant}/license/{key}/upgrade"), "\(logged.prefix(2_000))")
        let secret = key.withLockedValue { $0 }
        #expect(!secret.isEmpty && !logged.contains(secret) && !logged.contains("ACME-AAAA-BBBB-CCCC-DDDD"))
    }

    @Test func theAccountSellsTheLicensesOffersThroughStripeCheckout() async throws {
        try await CheckoutTests.withStripe(publicURL: "https://licenses.acme.example") { client, stripe in
            _ = try await CheckoutTests.configured(client)
            let seed = try await PaidChangeTests.catalogue(client)
            let browser = Browser(client)
            _ = try await browser.get("/t/acme/license/\(seed.licenseKey)/upgrade")
            let page = try await browser.get()
            #expect(page.text.contains("Upgrade to Pro · $29") && page.text.contains("Renew · $19 a year") && page.text.contains("Add devices · $9 per device"))
            let bought = try await browser.post("/licenses/\(seed.licenseId)/buy", [("offer", "seats"), ("quantity", "2")])
            #expect(bought.status == .seeOther && bought.headers[.location] == "https://checkout.stripe.com/c/pay/cs_test_1", "\(bought.text)")
            let form = CheckoutTests.form(try #require(stripe.requests.last))
            #expect(form["line_items[0][price]"] == "price_seat" && form["line_items[0][quantity]"] == "2")
            #expect(form["metadata[keylight_license_id]"] == seed.licenseId)
            #expect(form["success_url"]?.hasPrefix("https://licenses.acme.example/portal/acme/account?paid=1") == true)
            #expect(try await browser.get("\(AccountTests.base)?paid=1").text.contains("applies to your license as soon as"))
            _ = try await browser.get()
            #expect(try await browser.post("/licenses/\(seed.licenseId)/buy", [("offer", "upgrade:pro")]).status == .seeOther)
            #expect(CheckoutTests.form(try #require(stripe.requests.last))["line_items[0][price]"] == "price_up_pro")
            _ = try await browser.get()
            #expect(try await browser.post("/licenses/\(seed.licenseId)/buy", [("offer", "everything")]).status == .badRequest)
        }
    }
}
