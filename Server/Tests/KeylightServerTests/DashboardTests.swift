import Crypto
import Foundation
import KeylightTestSupport
import KeylightServerTestSupport
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import SQLKit
import Testing

/// The dashboard through the router: sign-in, sessions, CSRF and throttling (the pages and
/// forms signed in are in DashboardPageTests).
@Suite(.timeLimit(.minutes(6))) struct DashboardTests {
    static let email = "dev@example.com"
    static let password = "correct horse battery"

    /// One bcrypt pool for every test's accounts (tests lower the cost, so one thread suffices).
    static let hasher = PasswordHasher(threads: 1, capacity: 64)

    static func accounts(_ client: Client) -> DashboardAccounts {
        var accounts = DashboardAccounts(database: client.database, hasher: hasher, clock: client.clock, sealer: client.server.admin.sealer)
        accounts.cost = 4
        return accounts
    }

    static func user(_ client: Client) async throws {
        _ = try await accounts(client).createUser(email: email, password: password)
    }

    /// A signed-in browser on a server with tenant acme, product app and one license.
    static func signedIn(_ client: Client) async throws -> (DashboardBrowser, Seed) {
        let seed = try await client.seed()
        try await user(client)
        let browser = DashboardBrowser(client)
        let reply = try await browser.signIn(email, password)
        #expect(reply.status == .seeOther && reply.location == "/dashboard", "\(reply.status) \(reply.text.prefix(300))")
        return (browser, seed)
    }

    static func auditActions(_ client: Client) async throws -> [String] {
        try await client.database.auditLog(limit: 500).map(\.action)
    }

    @Test func pagesRedirectToSignInAndFormsChangeNothingWhenSignedOut() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let license = "/dashboard/t/acme/p/app/licenses/\(seed.licenseId)"
            for path in ["/dashboard", "/dashboard/t/acme", "/dashboard/t/acme/p/app", "/dashboard/t/acme/p/app/licenses?email=a%40b.c",
                         "/dashboard/t/acme/p/app/licenses.csv", license, "/dashboard/signing-keys", "/dashboard/audit"] {
                let reply = try await client.request(.get, path)
                #expect(reply.status == .seeOther, "\(path)")
                #expect(reply.location == "/dashboard/login?" + FormEncoding.encode([("next", path)]), "\(path): \(reply.location ?? "-")")
            }
            let before = try await HostileInputTests.snapshot(client)
            let audit = try await Self.auditActions(client).count
            for path in ["/dashboard/tenants", license + "/revoke", "/dashboard/signing-keys/rotate", "/dashboard/t/acme/products"] {
                let reply = try await client.request(.post, path, headers: [.contentType: "application/x-www-form-urlencoded"], body: "id=x&name=y")
                #expect(reply.status == .seeOther && reply.location == "/dashboard/login", "\(path)")
            }
            #expect(try await HostileInputTests.snapshot(client) == before)
            #expect(try await Self.auditActions(client).count == audit)
            // The stylesheet and script are public and static.
            let css = try await client.request(.get, "/dashboard/static/dashboard.css")
            #expect(css.status == .ok && css.headers[.contentType]?.hasPrefix("text/css") == true && css.text.contains("--accent"))
            #expect(try await client.request(.get, "/dashboard/static/dashboard.js").status == .ok)
        }
    }

    @Test func signInSessionCookieAndSignOut() async throws {
        try await Harness().run { client in
            try await Self.user(client)
            let browser = DashboardBrowser(client)
            let login = try await browser.get("/dashboard/login")
            #expect(login.status == .ok && login.text.contains("<form method=\"post\" action=\"/dashboard/login\">"))
            #expect(login.headers[.contentSecurityPolicy]?.contains("default-src 'self'") == true)
            #expect(login.headers[.init("X-Frame-Options")!] == "DENY" && login.headers[.cacheControl] == "no-store")
            // Before sign-in there is no session, only the sign-in form's CSRF cookie.
            let formCookie = try #require(browser.setCookies.last)
            #expect(formCookie.hasPrefix("keylight_login=") && formCookie.contains("HttpOnly") && formCookie.contains("SameSite=Strict") && formCookie.contains("Path=/dashboard/login"))
            #expect(!formCookie.contains("Secure"))  // served over plain http here
            #expect(browser.cookies["keylight_session"] == nil)

            let wrong = try await browser.post("/dashboard/login", [("email", Self.email), ("password", "not the password")])
            #expect(wrong.status == .unauthorized && wrong.text.contains("Wrong email or password."))
            let unknown = try await browser.post("/dashboard/login", [("email", "nobody@example.com"), ("password", Self.password)])
            #expect(unknown.status == .unauthorized && unknown.text.contains("Wrong email or password."))

            let ok = try await browser.post("/dashboard/login", [("email", "DEV@example.com "), ("password", Self.password), ("next", "/dashboard/audit")])
            #expect(ok.status == .seeOther && ok.location == "/dashboard/audit")
            let sessionCookie = try #require(browser.setCookies.first { $0.hasPrefix("keylight_session=") })
            #expect(sessionCookie.contains("HttpOnly") && sessionCookie.contains("SameSite=Lax") && sessionCookie.contains("Path=/dashboard") && !sessionCookie.contains("Secure"))
            let signedInCookie = try #require(browser.cookies["keylight_session"])
            let home = try await browser.get("/dashboard")
            #expect(home.status == .ok && home.text.contains(Self.email) && home.text.contains("Sign out"))
            #expect(try await client.database.dashboardUser(email: Self.email)?.lastLoginAt == client.clock.unixSeconds)
            // Sessions live in the database, keyed by a hash of the cookie, never the cookie itself.
            let stored = try await client.database.sql.raw("SELECT id FROM dashboard_sessions").all(decodingColumn: "id", as: String.self)
            #expect(!stored.isEmpty && !stored.contains(signedInCookie))
            // The cookie the replay below uses opens the dashboard now...
            #expect(try await client.request(.get, "/dashboard", headers: [.cookie: "keylight_session=\(signedInCookie)"]).status == .ok)

            #expect(try await browser.post("/dashboard/logout").location == "/dashboard/login")
            #expect(try await browser.get("/dashboard").status == .seeOther)
            // The signed-in cookie replayed after sign-out is worth nothing (it worked a moment ago).
            let replay = try await client.request(.get, "/dashboard", headers: [.cookie: "keylight_session=\(signedInCookie)"])
            #expect(replay.status == .seeOther && replay.location?.hasPrefix("/dashboard/login") == true)
            #expect(try await client.database.sql.raw("SELECT id FROM dashboard_sessions").all(decodingColumn: "id", as: String.self).isEmpty)
        }
    }

    @Test func behindTLSCookiesAreSecureAndTheSnippetUsesThePublicURL() async throws {
        var harness = Harness()
        harness.configuration.publicURL = "https://licenses.example.com"
        try await harness.run { client in
            _ = try await client.seed()
            try await Self.user(client)
            let browser = DashboardBrowser(client)
            try await browser.signIn(Self.email, Self.password)
            #expect(!browser.setCookies.isEmpty && browser.setCookies.allSatisfy { $0.contains("; Secure") || $0.contains("Secure;") })
            let product = try await browser.get("/dashboard/t/acme/p/app")
            #expect(product.text.contains("URL(string: &quot;https://licenses.example.com&quot;)"))
        }
    }

    @Test func signInNeedsTheFormsTokenAndOnlyRedirectsWithinTheDashboard() async throws {
        try await Harness().run { client in
            try await Self.user(client)
            let browser = DashboardBrowser(client)
            _ = try await browser.get("/dashboard/login")
            let forged = try await browser.post("/dashboard/login", [("email", Self.email), ("password", Self.password)], csrf: "")
            #expect(forged.status == .forbidden)
            let wrongToken = try await browser.post("/dashboard/login", [("email", Self.email), ("password", Self.password)], csrf: "x")
            #expect(wrongToken.status == .forbidden)
            #expect(try await browser.get("/dashboard").status == .seeOther)
            for next in ["https://evil.example/", "//evil.example", "/dashboard\\@evil", "javascript:alert(1)"] {
                let reply = try await DashboardBrowser(client).signIn(Self.email, Self.password, next: next)
                #expect(reply.location == "/dashboard", "\(next)")
            }
        }
    }

    @Test func failuresSlowSignInDownWithoutLockingTheOwnerOut() async throws {
        let harness = Harness()
        try await harness.run { client in
            try await Self.user(client)
            let browser = DashboardBrowser(client)
            _ = try await browser.get("/dashboard/login")
            for _ in 0..<5 {
                #expect(try await browser.post("/dashboard/login", [("email", Self.email), ("password", "guess")]).status == .unauthorized)
            }
            for _ in 0..<5 {
                #expect(try await browser.post("/dashboard/login", [("email", "nobody@example.com"), ("password", "guess")]).status == .unauthorized)
            }
            // Slowed down, a known and an unknown email answer alike: nothing says which emails exist.
            let known = try await browser.post("/dashboard/login", [("email", Self.email), ("password", "guess")])
            let unknown = try await browser.post("/dashboard/login", [("email", "nobody@example.com"), ("password", "guess")])
            #expect(known.status == .tooManyRequests && unknown.status == .tooManyRequests)
            #expect(known.headers[.retryAfter] == "1" && unknown.headers[.retryAfter] == "1")
            #expect(Self.loginError(known.text) == Self.loginError(unknown.text))
            #expect(Self.loginError(known.text)?.contains("try again in 1 seconds") == true)
            // Slowed down, even the right password waits (the guesser learns nothing)...
            let right = try await browser.post("/dashboard/login", [("email", Self.email), ("password", Self.password)])
            #expect(right.status == .tooManyRequests)
            // ...but only for a moment: the right password gets in once the wait is over. No hard lock.
            harness.clock.advance(by: 1)
            #expect(try await browser.post("/dashboard/login", [("email", Self.email), ("password", Self.password)]).status == .seeOther)
            // Each failure past the free ones doubles the wait, up to five minutes.
            let throttle = LoginThrottle(database: client.database)
            #expect((1...20).map { throttle.delay(afterFailures: $0) } == [0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300, 300, 300, 300, 300])
            let audit = try await client.database.auditLog(limit: 100)
            #expect(audit.filter { $0.action == "sign_in.failed" }.count == 10)
            #expect(audit.filter { $0.action == "sign_in.slowed_down" }.count == 3)
            let signIn = try #require(audit.first { $0.action == "sign_in" })
            #expect(signIn.actor == "user:\(Self.email)" && signIn.actorKind == "user" && signIn.actorId != nil)
        }
        var limited = Harness()
        limited.configuration.limits.signIns = RateLimit(perMinute: 1, burst: 3)
        try await limited.run { client in
            try await Self.user(client)
            let browser = DashboardBrowser(client)
            _ = try await browser.get("/dashboard/login")
            for _ in 0..<3 { _ = try await browser.post("/dashboard/login", [("email", "x@example.com"), ("password", "guess")]) }
            let throttled = try await browser.post("/dashboard/login", [("email", Self.email), ("password", Self.password)])
            #expect(throttled.status == .tooManyRequests && throttled.text.contains("Too many sign-in attempts"))
        }
    }

    /// The error line of a page (`<p class="error" …>…</p>`).
    static func loginError(_ html: String) -> String? {
        guard let start = html.range(of: "role=\"alert\">"), let end = html[start.upperBound...].range(of: "</p>") else { return nil }
        return String(html[start.upperBound..<end.lowerBound])
    }

    @Test func signInsPastThePasswordQueueAreRefusedWith429() async throws {
        var harness = Harness()
        harness.configuration.passwordHashQueue = 1
        try await harness.run { client in
            let browser = DashboardBrowser(client)
            _ = try await browser.get("/dashboard/login")
            // Unknown emails are checked against the cost-12 decoy hash (about 0.25 s each): with a
            // queue of one, concurrent sign-ins cannot all be checked. Eight, so that on a loaded
            // machine, where the tasks may start a while apart, some still overlap.
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for index in 0..<8 {
                    group.addTask { try await browser.post("/dashboard/login", [("email", "nobody\(index)@example.com"), ("password", "guess")]).status }
                }
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            #expect(statuses.contains(.tooManyRequests), "\(statuses)")
            #expect(statuses.contains(.unauthorized), "\(statuses)")
        }
    }

    @Test func parallelWrongPasswordsCannotSlipPastTheSlowDown() async throws {
        try await Harness().run { client in
            try await Self.user(client)
            let accounts = Self.accounts(client)
            // 20 attempts at once: at most 5 passwords are checked before the wait starts.
            let results = try await withThrowingTaskGroup(of: DashboardAccounts.SignIn.self) { group in
                for _ in 0..<20 { group.addTask { try await accounts.signIn(email: Self.email, password: "wrong guess") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let checked = results.filter { $0 == .wrongCredentials }.count
            #expect(checked >= 1 && checked <= 5, "\(checked) checked")
            #expect(results.allSatisfy { $0 == .wrongCredentials || $0 == .slowedDown(seconds: 1) })
            // Every password checked was counted first: none slipped through uncounted.
            let key = LoginThrottle.keys(email: Self.email, address: nil)[0]
            #expect(try await client.database.loginThrottle(key: key)?.failures == checked)
        }
    }

    @Test func aPasswordResetOrDeletionEndsEverySession() async throws {
        try await Harness().run { client in
            let (browser, _) = try await Self.signedIn(client)
            #expect(try await browser.get("/dashboard").status == .ok)
            // Reset: the session made with the old password is refused.
            _ = try await Self.accounts(client).createUser(email: Self.email, password: "a brand new password", replacing: true)
            let afterReset = try await browser.get("/dashboard")
            #expect(afterReset.status == .seeOther && afterReset.location?.hasPrefix("/dashboard/login") == true)
            // A fresh sign-in works, then deleting the user ends that session too.
            let again = DashboardBrowser(client)
            #expect(try await again.signIn(Self.email, "a brand new password").status == .seeOther)
            #expect(try await again.get("/dashboard").status == .ok)
            // The last owner cannot be deleted; with a second owner, the first can.
            await #expect(throws: DashboardAccounts.AccountError.lastOwner) { try await Self.accounts(client).deleteUser(email: Self.email) }
            _ = try await Self.accounts(client).createUser(email: "second@example.com", password: "another long password")
            try await Self.accounts(client).deleteUser(email: Self.email)
            let afterDelete = try await again.get("/dashboard")
            #expect(afterDelete.status == .seeOther && afterDelete.location?.hasPrefix("/dashboard/login") == true)
            #expect(try await client.database.auditLog(limit: 50).contains { $0.action == "dashboard_user.delete" })
        }
    }

    @Test func anonymousSignInPagesWriteNoSessions() async throws {
        try await Harness().run { client in
            for _ in 0..<25 { #expect(try await DashboardBrowser(client).get("/dashboard/login").status == .ok) }
            #expect(try await client.count("SELECT COUNT(*) AS n FROM dashboard_sessions") == 0)
            // The form still works: its token is a cookie, checked against the form field.
            try await Self.user(client)
            let browser = DashboardBrowser(client)
            _ = try await browser.get("/dashboard/login")
            #expect(browser.cookies["keylight_login"] != nil)
            let foreign = try await browser.post("/dashboard/login", [("email", Self.email), ("password", Self.password)], csrf: "not-the-cookie")
            #expect(foreign.status == .forbidden)
            #expect(try await browser.post("/dashboard/login", [("email", Self.email), ("password", Self.password)]).status == .seeOther)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM dashboard_sessions") == 1)
        }
    }

    @Test func everyFormRejectsAMissingOrForeignToken() async throws {
        try await Harness().run { client in
            let (browser, seed) = try await Self.signedIn(client)
            let endpoint = try await WebhookTests.register(client, url: "https://hooks.example.com/x")
            let license = "/dashboard/t/acme/p/app/licenses/\(seed.licenseId)"
            let kid = client.server.keyRing.current["acme"]!.active.kid
            let forms: [(String, [(String, String)])] = [
                ("/dashboard/tenants", [("id", "other"), ("name", "Other")]),
                ("/dashboard/t/acme/products", [("id", "p2"), ("name", "P2"), ("key_prefix", "PTWO")]),
                ("/dashboard/t/acme/stripe", [("webhook_secret", "whsec_x")]),
                ("/dashboard/t/acme/checkout-key", []),
                ("/dashboard/t/acme/webhooks", [("url", "https://hooks.example.com/y")]),
                ("/dashboard/t/acme/webhooks/\(endpoint.id)/disable", []),
                ("/dashboard/t/acme/webhooks/\(endpoint.id)/delete", []),
                ("/dashboard/t/acme/p/app", [("name", "Renamed"), ("trial_duration_days", "3")]),
                ("/dashboard/t/acme/p/app/key-types", [("id", "kt2"), ("display_name", "K"), ("activation_limit", "2")]),
                ("/dashboard/t/acme/p/app/key-types/\(seed.keyType)/stripe", [("stripe_price_id", "price_1")]),
                ("/dashboard/t/acme/p/app/licenses", [("key_type_id", seed.keyType)]),
                (license + "/revoke", []), (license + "/suspend", []), (license + "/remint", []),
                (license + "/instances/i-1/deactivate", []),
                ("/dashboard/signing-keys/rotate", []),
                ("/dashboard/signing-keys/\(kid)/retire", []),
                ("/dashboard/logout", []),
            ]
            let before = try await HostileInputTests.snapshot(client)
            let audit = try await Self.auditActions(client).count
            for (path, fields) in forms {
                for token in ["", "forged-token", String(repeating: "a", count: 43)] {
                    let reply = try await browser.post(path, fields, csrf: token)
                    #expect(reply.status == .forbidden, "\(path) with token \(token.prefix(8)): \(reply.status)")
                    #expect(reply.text.contains("nothing was changed"))
                }
            }
            #expect(try await HostileInputTests.snapshot(client) == before)
            #expect(try await Self.auditActions(client).count == audit)
            #expect(try await client.database.product(tenantId: "acme", id: "app")?.name == "App")
            #expect(try await browser.get("/dashboard").status == .ok)  // still signed in: logout needs the token too
        }
    }
}

/// SHA-256 of a string as bytes, for comparing stored hashes.
func SHA256Digest(_ text: String) -> [UInt8] {
    Array(Crypto.SHA256.hash(data: Data(text.utf8)))
}
