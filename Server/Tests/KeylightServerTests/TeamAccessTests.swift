import Crypto
import Foundation
import HTTPTypes
import KeylightCore
import KeylightTestSupport
@testable import KeylightServer
import SQLKit
import Testing

/// Team access (issue 50): one permission table for the admin API and the dashboard, roles per
/// tenant, scoped tokens, the second factor, re-authentication, sessions and the audit trail.
@Suite(.timeLimit(.minutes(6))) struct TeamAccessTests {
    static let password = "correct horse battery"

    // MARK: Helpers

    /// A dashboard user with `role` in `tenant` (nil: every tenant).
    static func member(_ client: Client, _ email: String, tenant: String? = "acme", role: Role) async throws {
        _ = try await DashboardTests.accounts(client).createUser(email: email, password: password, membership: (tenant ?? Membership.everyTenant, role))
    }

    static func signedIn(_ client: Client, _ email: String) async throws -> DashboardBrowser {
        let browser = DashboardBrowser(client)
        let reply = try await browser.signIn(email, password)
        #expect(reply.status == .seeOther, "\(email): \(reply.status) \(reply.text.prefix(200))")
        return browser
    }

    /// A token made with the owner's token; answers its secret.
    static func token(_ client: Client, _ body: [String: Any]) async throws -> String {
        let reply = try await client.admin(.post, "/tokens", body)
        #expect(reply.status == .created, "\(reply.status) \(reply.text)")
        return try #require(reply["token"] as? String)
    }

    /// Counts of what a refused request must not change.
    static func snapshot(_ client: Client) async throws -> [Int] {
        var counts = try await HostileInputTests.snapshot(client)
        for table in ["audit_log", "mail_outbox", "team_memberships", "team_invitations", "api_tokens", "dashboard_users", "settings", "license_metadata", "bulk_jobs"] {
            counts.append(try await client.count("SELECT COUNT(*) AS n FROM \(table)"))
        }
        return counts
    }

    /// A route's path with its parameters filled: the seeded tenant and product, `x` for the rest.
    static func fill(_ path: String, tenant: String = "acme", product: String = "app") -> String {
        "/" + path.split(separator: "/").map { part -> String in
            switch part {
            case ":tenant", "{tenant}": tenant
            case ":product", "{product}": product
            default: part.hasPrefix(":") || part.hasPrefix("{") ? "x" : String(part)
            }
        }.joined(separator: "/")
    }

    /// RFC 6238 (SHA-1, six digits), written here from the RFC rather than taken from the server.
    static func totp(key: [UInt8], at time: Int64) -> String {
        var counter = UInt64(time / 30).bigEndian
        let message = withUnsafeBytes(of: &counter) { Array($0) }
        let mac = Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: SymmetricKey(data: key)))
        let offset = Int(mac[19] & 0x0F)
        let value = (UInt32(mac[offset] & 0x7F) << 24) | (UInt32(mac[offset + 1]) << 16) | (UInt32(mac[offset + 2]) << 8) | UInt32(mac[offset + 3])
        return String(format: "%06d", value % 1_000_000)
    }

    static func base32Decode(_ text: String) -> [UInt8] {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var bytes: [UInt8] = [], buffer = 0, bits = 0
        for char in text.uppercased() where char != " " && char != "=" {
            guard let index = alphabet.firstIndex(of: char) else { continue }
            buffer = (buffer << 5) | index
            bits += 5
            if bits >= 8 {
                bytes.append(UInt8((buffer >> (bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return bytes
    }

    /// Sets up the second factor through the account page; answers the key and the recovery codes.
    static func enrollSecondFactor(_ browser: DashboardBrowser, clock: TestClock) async throws -> (key: [UInt8], recovery: [String]) {
        _ = try await browser.get("/dashboard/account")
        #expect(try await browser.post("/dashboard/account/two-factor/start").status == .seeOther)
        let page = try await browser.get("/dashboard/account")
        let typed = try #require(Self.between(page.text, #"id="totp-key">"#, "</code>"))
        let key = base32Decode(typed)
        #expect(key.count == 32)
        let enabled = try await browser.post("/dashboard/account/two-factor/enable", [("code", totp(key: key, at: clock.unixSeconds))])
        #expect(enabled.status == .ok, "\(enabled.status)")
        let codes = try #require(Self.between(enabled.text, #"id="recovery-codes">"#, "</code>")).split(separator: "\n").map(String.init)
        #expect(codes.count == 10)
        return (key, codes)
    }

    /// The link an invitation's mail carries, opened from its seal as the mail composer does.
    static func invitationPath(_ client: Client, email: String) async throws -> String {
        let row = try #require(try await client.database.sql.raw("""
            SELECT id, sealed_token FROM team_invitations WHERE email = \(bind: email) ORDER BY created_at DESC LIMIT 1
            """).first())
        let id = try row.decode(column: "id", as: String.self)
        let sealed = try row.decode(column: "sealed_token", as: String.self)
        let token = String(decoding: try client.server.admin.sealer.open(sealed, context: TeamInvitations.sealContext(id: id)), as: UTF8.self)
        return "/dashboard/invite/" + token
    }

    /// A server that mails (to an SMTP server that is never there, so mails stay queued) and
    /// knows its public URL.
    static func mailingHarness() throws -> Harness {
        var harness = try MailOutboxTests.harness()
        harness.configuration.publicURL = "https://keys.example.com"
        return harness
    }

    /// acme's owner, signed in, on the team page (its CSRF token ready for the forms).
    static func ownerOnTeamPage(_ client: Client) async throws -> DashboardBrowser {
        _ = try await client.seed()
        try await member(client, "owner@acme.test", role: .owner)
        let owner = try await signedIn(client, "owner@acme.test")
        _ = try await owner.get("/dashboard/t/acme/team")
        return owner
    }

    static func between(_ text: String, _ start: String, _ end: String) -> String? {
        guard let from = text.range(of: start), let to = text[from.upperBound...].range(of: end) else { return nil }
        return String(text[from.upperBound..<to.lowerBound])
    }

    // MARK: The table

    @Test func everyRouteNamesItsPermissionAndOnlyOwnAccountRoutesNone() async throws {
        try await Harness().run { client in
            let admin = client.server.adminRoutes.routes
            #expect(admin.count > 60)
            #expect(admin.allSatisfy { $0.permission != nil }, "\(admin.filter { $0.permission == nil }.map(\.path))")
            let dashboard = client.server.dashboardRoutes.routes
            let unnamed = dashboard.filter { $0.permission == nil }.map(\.path)
            #expect(unnamed.allSatisfy { $0.hasPrefix("/dashboard/account") || $0 == "/dashboard/logout" }, "\(unnamed)")
            // The issue's dangerous actions name permissions that ask for a fresh confirmation.
            for (method, path) in [("POST", "/admin/v1/tenants/{tenant}/signing-keys/rotate"), ("POST", "/admin/v1/tenants/{tenant}/webhooks"),
                                   ("PUT", "/admin/v1/tenants/{tenant}/stripe"), ("PUT", "/admin/v1/tenants/{tenant}/mail"), ("POST", "/admin/v1/tokens"),
                                   ("POST", "/admin/v1/tenants/{tenant}/products/{product}/licenses/{id}/remint")] {
                let route = try #require(admin.first { $0.method == method && $0.path == path }, "\(method) \(path)")
                #expect(route.permission?.needsRecentSignIn == true, "\(method) \(path)")
            }
            #expect(dashboard.first { $0.path == "/dashboard/t/{tenant}/team/invite" }?.permission == .usersManage)
        }
    }

    @Test func rolesHoldWhatTheIssueSays() {
        #expect(Role.owner.permissions == Set(Permission.allCases))
        #expect(Role.admin.permissions == Set(Permission.allCases).subtracting([.usersManage, .signingKeysRotateAll]))
        let developer = Role.developer.permissions
        #expect([.productsWrite, .releasesPublish, .webhooksWrite, .insightsRead].allSatisfy { developer.contains($0) })
        #expect(![.paymentsWrite, .paymentsRead, .usersManage, .tokensManage, .licensesRemint, .licensesWrite].contains { developer.contains($0) })
        #expect(Role.support.permissions == [.tenantsRead, .productsRead, .licensesRead, .seatsFree, .licensesMail])
        #expect(Role.readOnly.permissions.allSatisfy { $0.rawValue.hasSuffix(":read") })
    }

    /// Every admin route, for a token of each role over one tenant, a token over one product, and
    /// the owner's token: 403 exactly where the table says, and nothing changes when it does.
    @Test func everyAdminRouteAnswersAsTheTableSays() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            _ = try await client.admin(.post, "/tenants", ["id": "other", "name": "Other"])
            let routes = client.server.adminRoutes.routes
            var principals: [(name: String, token: String, allows: (RouteTable.Route) -> Bool)] = []
            for role in Role.allCases {
                let token = try await Self.token(client, ["name": "t-\(role.rawValue)", "tenant_id": "acme", "role": role.rawValue])
                principals.append((role.rawValue, token, { route in
                    guard let permission = route.permission else { return false }
                    if !route.path.contains("{tenant}") && permission.isServerWide { return false }
                    return role.permissions.contains(permission)
                }))
            }
            let productToken = try await Self.token(client, ["name": "ci", "tenant_id": "acme", "product_id": "app", "permissions": ["licenses:read", "licenses:write"]])
            principals.append(("product", productToken, { route in
                route.path.contains("{product}") && [.licensesRead, .licensesWrite].contains(route.permission)
                    || (!route.path.contains("{tenant}") && [.licensesRead, .licensesWrite].contains(route.permission))
            }))
            var checked = 0
            for (name, token, allows) in principals {
                for route in routes {
                    let before = try await Self.snapshot(client)
                    let method = HTTPRequest.Method(route.method)!
                    let reply = try await client.admin(method, Self.fill(String(route.path.dropFirst("/admin/v1".count))), route.fields == nil ? nil : [:], token: token)
                    if allows(route) {
                        #expect(reply.status != .forbidden && reply.status != .unauthorized, "\(name) \(route.method) \(route.path): \(reply.status) \(reply.text.prefix(120))")
                    } else {
                        #expect(reply.status == .forbidden && reply.code == "FORBIDDEN", "\(name) \(route.method) \(route.path): \(reply.status) \(reply.text.prefix(120))")
                        #expect(try await Self.snapshot(client) == before, "\(name) \(route.method) \(route.path) changed something")
                    }
                    checked += 1
                }
            }
            #expect(checked == routes.count * 6)
            // The owner's token may do everything (nothing it sends is refused for want of permission).
            for route in routes where route.method == "GET" {
                let reply = try await client.admin(.get, Self.fill(String(route.path.dropFirst("/admin/v1".count))))
                #expect(reply.status != .forbidden, "owner \(route.path)")
            }
        }
    }

    /// Every dashboard action, for a member of each role: 403 exactly where the table says.
    @Test func everyDashboardActionAnswersAsTheTableSays() async throws {
        for role in Role.allCases {
            try await Harness().run { client in
                let seed = try await client.seed()
                try await Self.member(client, "\(role.rawValue)@example.com", role: role)
                let browser = try await Self.signedIn(client, "\(role.rawValue)@example.com")
                for route in client.server.dashboardRoutes.routes {
                    guard let permission = route.permission else { continue }
                    let path = Self.fill(route.path).replacingOccurrences(of: "/licenses/x", with: "/licenses/\(seed.licenseId)")
                    let allowed = route.path.contains("{tenant}") ? role.permissions.contains(permission)
                        : !permission.isServerWide && role.permissions.contains(permission)
                    let before = try await Self.snapshot(client)
                    _ = try await browser.get("/dashboard/account")  // a fresh CSRF token
                    let reply = route.method == "GET" ? try await browser.get(path) : try await browser.post(path)
                    if allowed {
                        #expect(reply.status != .forbidden, "\(role) \(route.method) \(route.path): \(reply.status)")
                    } else {
                        #expect(reply.status == .forbidden, "\(role) \(route.method) \(route.path): \(reply.status)")
                        #expect(try await Self.snapshot(client) == before, "\(role) \(route.method) \(route.path) changed something")
                    }
                }
                // Support cannot open the webhook page, nor see its link; the overview shows only its tenant.
                if role == .support {
                    #expect(try await browser.get("/dashboard/t/acme/webhooks").status == .forbidden)
                    #expect(!(try await browser.get("/dashboard/t/acme")).text.contains("/dashboard/t/acme/webhooks"))
                }
            }
        }
    }

    @Test func aMemberSeesOnlyTheirTenantsAndOtherTenantsAreNotFound() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            _ = try await client.admin(.post, "/tenants", ["id": "other", "name": "Other Co"])
            _ = try await client.admin(.post, "/tenants/other/products", ["id": "tool", "name": "Tool", "key_prefix": "TOOL"])
            try await Self.member(client, "dev@acme.test", role: .admin)
            let browser = try await Self.signedIn(client, "dev@acme.test")
            let home = try await browser.get("/dashboard")
            #expect(home.text.contains("/dashboard/t/acme") && !home.text.contains("Other Co"))
            #expect(try await browser.get("/dashboard/t/other").status == .notFound)
            #expect(try await browser.get("/dashboard/t/other/p/tool/licenses").status == .notFound)
            #expect(try await browser.get("/dashboard/t/other/p/tool/licenses.csv").status == .notFound)
            #expect(!(try await browser.get("/dashboard/signing-keys")).text.contains("Other Co"))
            #expect(!(try await browser.get("/dashboard/audit")).text.contains("other"))
            // An admin of one tenant cannot rotate every tenant.
            #expect(try await browser.post("/dashboard/signing-keys/rotate").status == .forbidden)

            let token = try await Self.token(client, ["name": "acme-admin", "tenant_id": "acme", "role": "admin"])
            let tenants = try await client.admin(.get, "/tenants", token: token)
            #expect((tenants["tenants"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["acme"])
            for path in ["/tenants/other/products", "/tenants/other/products/tool/licenses", "/tenants/other/webhooks", "/tenants/nope/products"] {
                let reply = try await client.admin(.get, path, token: token)
                #expect(reply.status == .notFound && reply.code == "NOT_FOUND", "\(path)")
            }
            // Unknown and forbidden tenants answer the same: nothing tells that `other` exists.
            let unknown = try await client.admin(.get, "/tenants/nope/webhooks", token: token)
            let hidden = try await client.admin(.get, "/tenants/other/webhooks", token: token)
            #expect(unknown.text == hidden.text)
            let audit = try await client.admin(.get, "/audit-log?limit=500", token: token)
            let entries = try #require(audit["entries"] as? [[String: Any]])
            #expect(!entries.isEmpty && entries.allSatisfy { $0["tenant_id"] as? String == "acme" })
            #expect(try await client.admin(.get, "/audit-log?tenant=other", token: token).status == .notFound)
            let keys = try #require(try await client.admin(.get, "/signing-keys", token: token)["keys"] as? [[String: Any]])
            #expect(!keys.isEmpty && keys.allSatisfy { $0["tenant_id"] as? String == "acme" })
            // A token over one product does not reach the tenant's other products.
            _ = try await client.admin(.post, "/tenants/acme/products", ["id": "second", "name": "Second", "key_prefix": "SECO"])
            let ci = try await Self.token(client, ["name": "ci", "tenant_id": "acme", "product_id": "app", "permissions": ["licenses:read"]])
            #expect(try await client.admin(.get, "/tenants/acme/products/app/licenses", token: ci).status == .ok)
            #expect(try await client.admin(.get, "/tenants/acme/products/second/licenses", token: ci).status == .notFound)
        }
    }

    // MARK: Tokens

    @Test func tokensAreShownOnceStoredHashedAndStopAtOnceWhenRevokedOrExpired() async throws {
        let harness = Harness()
        try await harness.run { client in
            let seed = try await client.seed()
            let created = try await client.admin(.post, "/tokens", [
                "name": "ci-release", "tenant_id": "acme", "product_id": "app", "permissions": ["licenses:read"],
                "expires_at": harness.clock.unixSeconds + 3_600,
            ])
            #expect(created.status == .created)
            let token = try #require(created["token"] as? String)
            let id = try #require(created["id"] as? String)
            #expect(token.hasPrefix("klt_") && AdminToken.isWellFormed(token))
            // Stored as a hash only.
            let hashes = try await client.database.sql.raw("SELECT token_hash FROM api_tokens").all(decodingColumn: "token_hash", as: String.self)
            #expect(hashes.contains(AdminToken.hash(token)) && !hashes.contains(token))
            // Listed without the secret, with its last use.
            #expect(try await client.admin(.get, "/tenants/acme/products/app/licenses/\(seed.licenseId)", token: token).status == .ok)
            let listed = try await client.admin(.get, "/tokens")
            #expect(!listed.text.contains(token))
            let row = try #require((listed["tokens"] as? [[String: Any]])?.first { $0["id"] as? String == id })
            #expect(row["last_used_at"] as? Int64 == harness.clock.unixSeconds && row["permissions"] as? [String] == ["licenses:read"])
            #expect(row["tenant_id"] as? String == "acme" && row["product_id"] as? String == "app" && row["role"] is NSNull)
            // Reads only: a write is 403, and the audit log names the token on what it does.
            #expect(try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/revoke", token: token).status == .forbidden)
            // Revoked: 401 at once.
            #expect(try await client.admin(.delete, "/tokens/\(id)").status == .noContent)
            let revoked = try await client.admin(.get, "/tenants/acme/products/app/licenses/\(seed.licenseId)", token: token)
            #expect(revoked.status == .unauthorized && revoked.code == "UNAUTHORIZED")
            // Expired: 401 once its time has come.
            let short = try await Self.token(client, ["name": "short", "tenant_id": "acme", "role": "support", "expires_at": harness.clock.unixSeconds + 60])
            #expect(try await client.admin(.get, "/tenants/acme/products", token: short).status == .ok)
            harness.clock.advance(by: 60)
            #expect(try await client.admin(.get, "/tenants/acme/products", token: short).status == .unauthorized)
            // Writes by a token are audited under its name and id, with where they came from.
            let writer = try await client.admin(.post, "/tokens", ["name": "writer", "tenant_id": "acme", "permissions": ["licenses:write"]])
            let writerToken = try #require(writer["token"] as? String)
            #expect(try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/suspend", token: writerToken).status == .ok)
            let entry = try #require(try await client.database.auditLog(limit: 5).first { $0.action == "license.suspend" })
            #expect(entry.actor == "token:writer" && entry.actorKind == "token" && entry.actorId == writer["id"] as? String)
            // Bad bodies change nothing.
            let before = try await Self.snapshot(client)
            for body: [String: Any] in [["name": "x"], ["name": "x", "tenant_id": "acme"], ["name": "x", "tenant_id": "acme", "role": "god"],
                                        ["name": "x", "tenant_id": "acme", "permissions": ["licenses:everything"]],
                                        ["name": "x", "tenant_id": "acme", "permissions": []], ["name": "x", "tenant_id": "acme", "role": "owner", "permissions": ["licenses:read"]],
                                        ["name": "x", "tenant_id": "acme", "role": "owner", "expires_at": 5], ["name": "x", "tenant_id": "acme", "role": "owner", "scope": "all"]] {
                let reply = try await client.admin(.post, "/tokens", body)
                #expect(reply.status == .badRequest, "\(body): \(reply.status) \(reply.text)")
            }
            #expect(try await client.admin(.post, "/tokens", ["name": "x", "tenant_id": "nope", "role": "owner"]).status == .notFound)
            #expect(try await client.admin(.delete, "/tokens/tok_nope").status == .notFound)
            #expect(try await Self.snapshot(client) == before)
        }
    }

    @Test func noOneGrantsMoreThanTheyHold() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            _ = try await client.admin(.post, "/tenants", ["id": "other", "name": "Other"])
            let manager = try await Self.token(client, ["name": "mgr", "tenant_id": "acme", "permissions": ["tokens:manage", "licenses:read"]])
            let before = try await Self.snapshot(client)
            for body: [String: Any] in [
                ["name": "x", "tenant_id": "acme", "permissions": ["licenses:write"]],
                ["name": "x", "tenant_id": "acme", "role": "admin"],
                ["name": "x", "tenant_id": NSNull(), "permissions": ["licenses:read"]],
            ] {
                let reply = try await client.admin(.post, "/tokens", body, token: manager)
                #expect(reply.status == .forbidden, "\(body): \(reply.status) \(reply.text)")
            }
            #expect(try await client.admin(.post, "/tokens", ["name": "x", "tenant_id": "other", "permissions": ["licenses:read"]], token: manager).status == .notFound)
            #expect(try await Self.snapshot(client) == before)
            // Within its own: allowed.
            #expect(try await client.admin(.post, "/tokens", ["name": "reader", "tenant_id": "acme", "product_id": "app", "permissions": ["licenses:read"]], token: manager).status == .created)
            // Only an owner of every tenant makes a token for every tenant.
            let admin = try await Self.token(client, ["name": "all-admin", "tenant_id": NSNull(), "role": "admin"])
            #expect(try await client.admin(.post, "/tokens", ["name": "x", "tenant_id": NSNull(), "role": "support"], token: admin).status == .forbidden)
            #expect(try await client.admin(.post, "/tokens", ["name": "x", "tenant_id": NSNull(), "role": "support"]).status == .created)
            // A member of one tenant cannot invite an owner, nor anyone when they are support.
            try await Self.member(client, "admin@acme.test", role: .admin)
            let browser = try await Self.signedIn(client, "admin@acme.test")
            #expect(try await browser.get("/dashboard/t/acme/team").status == .forbidden)
        }
    }

    @Test func whatAMemberHandedOutDiesWithTheirRights() async throws {
        let harness = Harness()
        try await harness.run { client in
            _ = try await client.seed()
            try await Self.member(client, "root@example.com", tenant: nil, role: .owner)
            try await Self.member(client, "admin@acme.test", role: .owner)
            let admin = try await Self.signedIn(client, "admin@acme.test")
            _ = try await admin.get("/dashboard/t/acme/tokens")
            let made = try await admin.post("/dashboard/t/acme/tokens", [("name", "forever"), ("role", "admin")])
            let token = try #require(Self.between(made.text, #"id="new-token">"#, "</code>"))
            #expect(try await client.admin(.get, "/tenants/acme/products", token: token).status == .ok)
            // A token the admin's token makes, and one that one makes: they die with it.
            let child = try await client.admin(.post, "/tokens", ["name": "child", "tenant_id": "acme", "role": "admin"], token: token)
            let childToken = try #require(child["token"] as? String)
            let grandchild = try #require(try await client.admin(.post, "/tokens", ["name": "grandchild", "tenant_id": "acme", "role": "support"], token: childToken)["token"] as? String)
            _ = try await admin.get("/dashboard/t/acme/team")
            _ = try await admin.post("/dashboard/t/acme/team/invite", [("email", "pal@acme.test"), ("role", "admin")])
            let invitation = try await Self.invitationPath(client, email: "pal@acme.test")
            // The server's owner demotes acme's owner to support: what they handed out goes at once.
            let adminId = try #require(try await client.database.dashboardUser(email: "admin@acme.test")?.id)
            try await client.server.admin.setMemberRole(tenantId: "acme", userId: adminId, role: "support", by: .owner(.adminToken))
            #expect(try await client.admin(.get, "/tenants/acme/products", token: token).status == .unauthorized)
            #expect(try await client.admin(.get, "/tenants/acme/products", token: childToken).status == .unauthorized)
            #expect(try await client.admin(.get, "/tenants/acme/products", token: grandchild).status == .unauthorized)
            #expect(try await DashboardBrowser(client).get(invitation).status == .notFound)
            let reasons = try await client.database.auditLog(limit: 50).filter { $0.action == "token.revoke" }
            #expect(reasons.count == 3)
            // A token that expires hands out only tokens that expire no later.
            let expiring = try await Self.token(client, ["name": "week", "tenant_id": "acme", "role": "admin", "expires_at": harness.clock.unixSeconds + 7 * 86_400])
            #expect(try await client.admin(.post, "/tokens", ["name": "x", "tenant_id": "acme", "role": "support"], token: expiring).status == .badRequest)
            #expect(try await client.admin(.post, "/tokens", ["name": "x", "tenant_id": "acme", "role": "support", "expires_at": harness.clock.unixSeconds + 86_400], token: expiring).status == .created)
        }
    }

    @Test(arguments: StorageBackend.available)
    func twoOwnersDemotingEachOtherAtOnceLeaveOne(backend: StorageBackend) async throws {
        try await backend.with(poolSize: 8) { database in
            for round in 0..<5 {
                var ids: [String] = []
                for name in ["a", "b"] {
                    let id = "\(name)\(round)"
                    try await database.sql.raw("""
                        INSERT INTO dashboard_users (id, email, password_hash, failed_logins, locked_until, created_at) VALUES (\(bind: id), \(bind: id + "@x.test"), 'x', 0, 0, 1)
                        """).run()
                    ids.append(id)
                }
                try await database.sql.raw("DELETE FROM team_memberships").run()
                for id in ids { try await database.setMembership(userId: id, email: id, tenantId: "*", role: .owner, now: 1, actor: .system) }
                let outcomes = await withTaskGroup(of: Bool.self) { group in
                    for id in ids {
                        group.addTask { (try? await database.setMembership(userId: id, email: id, tenantId: "*", role: .admin, now: 2, actor: .system)) != nil }
                    }
                    return await group.reduce(into: [Bool]()) { $0.append($1) }
                }
                #expect(outcomes.filter { $0 }.count == 1, "round \(round): \(outcomes)")
                let owners = try await database.sql.raw("SELECT COUNT(*) AS n FROM team_memberships WHERE role = 'owner'").first(decodingColumn: "n", as: Int.self)
                #expect(owners == 1)
            }
        }
    }

    // MARK: Second factor

    @Test func totpMatchesTheRFCVectorsEachCodeWorksOnceAndRecoveryCodesOnce() async throws {
        // RFC 6238 appendix B (SHA-1), last six digits.
        for (time, code) in [(Int64(59), "287082"), (1_111_111_109, "081804"), (1_234_567_890, "005924"), (2_000_000_000, "279037")] {
            let factor = TwoFactor(clock: TestClock(time))
            #expect(factor.matchingStep(code, secret: "12345678901234567890") == time / 30, "\(time)")
            #expect(Self.totp(key: Array("12345678901234567890".utf8), at: time) == code)
        }
        #expect(TwoFactor(clock: TestClock(59)).matchingStep("287083", secret: "12345678901234567890") == nil)
        #expect(TwoFactor(clock: TestClock(59)).matchingStep("28708", secret: "12345678901234567890") == nil)

        let harness = Harness()
        try await harness.run { client in
            _ = try await client.seed()
            try await Self.member(client, "owner@acme.test", role: .owner)
            let (key, recovery) = try await Self.enrollSecondFactor(try await Self.signedIn(client, "owner@acme.test"), clock: harness.clock)
            #expect(Set(recovery).count == 10)
            // Sign-in now asks for the code after the password.
            let browser = DashboardBrowser(client)
            let step = try await browser.signIn("owner@acme.test", Self.password)
            #expect(step.status == .seeOther && step.location?.hasPrefix("/dashboard/login/second-factor") == true)
            #expect(try await browser.get("/dashboard").location?.hasPrefix("/dashboard/login") == true)
            harness.clock.advance(by: 30)
            let code = Self.totp(key: key, at: harness.clock.unixSeconds)
            let wrong = try await browser.post("/dashboard/login/second-factor", [("code", code == "000000" ? "111111" : "000000")])
            #expect(wrong.status == .unauthorized)
            #expect(try await browser.post("/dashboard/login/second-factor", [("code", code)]).status == .seeOther)
            #expect(try await browser.get("/dashboard").status == .ok)
            // The same code does not work twice.
            let again = DashboardBrowser(client)
            _ = try await again.signIn("owner@acme.test", Self.password)
            #expect(try await again.post("/dashboard/login/second-factor", [("code", code)]).status == .unauthorized)
            // A recovery code works once.
            #expect(try await again.post("/dashboard/login/second-factor", [("code", recovery[0].uppercased())]).status == .seeOther)
            let third = DashboardBrowser(client)
            _ = try await third.signIn("owner@acme.test", Self.password)
            #expect(try await third.post("/dashboard/login/second-factor", [("code", recovery[0])]).status == .unauthorized)
            #expect(try await third.post("/dashboard/login/second-factor", [("code", recovery[1])]).status == .seeOther)
            let actions = try await DashboardTests.auditActions(client)
            #expect(actions.contains("two_factor.enable") && actions.filter { $0 == "two_factor.recovery_code_used" }.count == 2)
            // The CLI's reset turns it off and ends every session.
            try await DashboardTests.accounts(client).resetTwoFactor(email: "owner@acme.test")
            #expect(try await third.get("/dashboard").location?.hasPrefix("/dashboard/login") == true)
            #expect(try await DashboardBrowser(client).signIn("owner@acme.test", Self.password).location == "/dashboard")
        }
    }

    @Test func aTenantOwnerCanRequireASecondFactorOfEveryMember() async throws {
        let harness = Harness()
        try await harness.run { client in
            _ = try await client.seed()
            try await Self.member(client, "owner@acme.test", role: .owner)
            try await Self.member(client, "support@acme.test", role: .support)
            let owner = try await Self.signedIn(client, "owner@acme.test")
            _ = try await owner.get("/dashboard/t/acme/team")
            #expect(try await owner.post("/dashboard/t/acme/team/two-factor", [("required", "on")]).status == .seeOther)
            // A member without one is sent to set it up, and reaches nothing else.
            let support = try await Self.signedIn(client, "support@acme.test")
            let license = try await support.get("/dashboard/t/acme/p/app/licenses")
            #expect(license.status == .seeOther && license.location == "/dashboard/account")
            _ = try await Self.enrollSecondFactor(support, clock: harness.clock)
            #expect(try await support.get("/dashboard/t/acme/p/app/licenses").status == .ok)
            // Required: it cannot be turned off.
            _ = try await support.get("/dashboard/account")
            let off = try await support.post("/dashboard/account/two-factor/disable")
            #expect(off.status == .seeOther && off.location == "/dashboard/account")
            #expect(try await support.get("/dashboard/account").text.contains("requires a second factor"))
        }
    }

    // MARK: Sessions

    @Test func reauthenticationIsAskedAfterTenMinutesAndIdleSessionsEnd() async throws {
        let harness = Harness()
        try await harness.run { client in
            _ = try await client.seed()
            try await Self.member(client, "owner@acme.test", role: .owner)
            let browser = try await Self.signedIn(client, "owner@acme.test")
            harness.clock.advance(by: 11 * 60)
            _ = try await browser.get("/dashboard/t/acme/webhooks")
            let before = try await Self.snapshot(client)
            let asked = try await browser.post("/dashboard/t/acme/webhooks", [("url", "https://hooks.example.com/k")])
            #expect(asked.status == .seeOther && asked.location?.hasPrefix("/dashboard/account/confirm") == true)
            #expect(try await Self.snapshot(client) == before)
            _ = try await browser.get(try #require(asked.location))
            let wrong = try await browser.post("/dashboard/account/confirm", [("password", "not the password"), ("next", "/dashboard/t/acme/webhooks")])
            #expect(wrong.status == .unauthorized)
            let confirmed = try await browser.post("/dashboard/account/confirm", [("password", Self.password), ("next", "/dashboard/t/acme/webhooks")])
            #expect(confirmed.status == .seeOther && confirmed.location == "/dashboard/t/acme/webhooks")
            _ = try await browser.get("/dashboard/t/acme/webhooks")
            #expect(try await browser.post("/dashboard/t/acme/webhooks", [("url", "https://hooks.example.com/k")]).status == .ok)
            // Reads never ask again.
            harness.clock.advance(by: 20 * 60)
            #expect(try await browser.get("/dashboard/t/acme/webhooks").status == .ok)
            // 30 minutes idle: signed out.
            harness.clock.advance(by: 31 * 60)
            #expect(try await browser.get("/dashboard/t/acme").location?.hasPrefix("/dashboard/login") == true)
        }
    }

    @Test func theSessionsPageListsAndEndsSessions() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            try await Self.member(client, "owner@acme.test", role: .owner)
            let laptop = try await Self.signedIn(client, "owner@acme.test")
            let phone = try await Self.signedIn(client, "owner@acme.test")
            let page = try await laptop.get("/dashboard/account")
            let sids = page.text.components(separatedBy: "/dashboard/account/sessions/").dropFirst().compactMap { $0.split(separator: "/").first.map(String.init) }
            #expect(sids.count == 2)
            // End the other one (not marked "this one").
            let mine = try #require(Self.between(page.text, "this one</span> <form method=\"post\" action=\"/dashboard/account/sessions/", "/end"))
            let other = try #require(sids.first { $0 != mine })
            #expect(try await laptop.post("/dashboard/account/sessions/\(other)/end").status == .seeOther)
            #expect(try await phone.get("/dashboard").location?.hasPrefix("/dashboard/login") == true)
            #expect(try await laptop.get("/dashboard").status == .ok)
            // Another user's session is not ours to end.
            try await Self.member(client, "dev@acme.test", role: .developer)
            let dev = try await Self.signedIn(client, "dev@acme.test")
            #expect(try await dev.post("/dashboard/account/sessions/\(mine)/end").status == .notFound)
            #expect(try await laptop.get("/dashboard").status == .ok)
        }
    }

    // MARK: Slow-down and owners

    @Test func theSlowDownCannotKeepAnOwnerWithASecondFactorOut() async throws {
        let harness = Harness()
        try await harness.run { client in
            _ = try await client.seed()
            try await Self.member(client, "owner@acme.test", role: .owner)
            let (key, _) = try await Self.enrollSecondFactor(try await Self.signedIn(client, "owner@acme.test"), clock: harness.clock)
            let attacker = DashboardBrowser(client)
            _ = try await attacker.get("/dashboard/login")
            for _ in 0..<30 { _ = try await attacker.post("/dashboard/login", [("email", "owner@acme.test"), ("password", "guess")]) }
            let slowed = try await attacker.post("/dashboard/login", [("email", "owner@acme.test"), ("password", Self.password)])
            #expect(slowed.status == .tooManyRequests && slowed.text.contains("name=\"code\""))
            // A guesser with a wrong code learns nothing about the password.
            let guess = try await attacker.post("/dashboard/login", [("email", "owner@acme.test"), ("password", Self.password), ("code", "123456")])
            #expect(guess.status == .tooManyRequests)
            // The owner, with the password and a code, gets in at once.
            harness.clock.advance(by: 30)
            let owner = DashboardBrowser(client)
            _ = try await owner.get("/dashboard/login")
            let reply = try await owner.post("/dashboard/login", [("email", "owner@acme.test"), ("password", Self.password), ("code", Self.totp(key: key, at: harness.clock.unixSeconds))])
            #expect(reply.status == .seeOther && reply.location == "/dashboard")
        }
    }

    /// An owner without a second factor: a guesser slows the account down, but not the browser
    /// the owner signed in with before, and waiting attempts do not make the wait longer.
    @Test func aGuesserCannotKeepTheOwnersOwnBrowserOut() async throws {
        let harness = Harness()
        try await harness.run { client in
            _ = try await client.seed()
            try await Self.member(client, "owner@acme.test", role: .owner)
            let owner = try await Self.signedIn(client, "owner@acme.test")
            #expect(owner.cookies[DeviceCookie.name] != nil)
            _ = try await owner.post("/dashboard/logout")
            let attacker = DashboardBrowser(client)
            _ = try await attacker.get("/dashboard/login")
            var counted = 0
            while counted < 8 {
                let reply = try await attacker.post("/dashboard/login", [("email", "owner@acme.test"), ("password", "guess")])
                if reply.status == .unauthorized { counted += 1 } else { harness.clock.advance(by: Int64(reply.headers[.retryAfter] ?? "1") ?? 1) }
            }
            let slowed = try await attacker.post("/dashboard/login", [("email", "owner@acme.test"), ("password", Self.password)])
            let wait = try #require(slowed.headers[.retryAfter].flatMap { Int64($0) })
            #expect(slowed.status == .tooManyRequests && wait == 8)
            // The owner's browser has a throttle of its own.
            #expect(try await owner.signIn("owner@acme.test", Self.password).location == "/dashboard")
            // Attempts that meet a wait count nowhere: hammering does not push it further.
            for _ in 0..<20 { _ = try await attacker.post("/dashboard/login", [("email", "owner@acme.test"), ("password", "guess")]) }
            harness.clock.advance(by: wait)
            #expect(try await DashboardBrowser(client).signIn("owner@acme.test", Self.password).location == "/dashboard")
            // A device cookie made for another account, or tampered with, counts as none.
            let sealer = client.server.admin.sealer
            let other = try DeviceCookie.make(email: "someone@acme.test", now: harness.clock.unixSeconds, sealer: sealer)
            #expect(DeviceCookie.throttleKey(other, email: "owner@acme.test", now: harness.clock.unixSeconds, sealer: sealer) == nil)
            #expect(DeviceCookie.throttleKey(other + "x", email: "someone@acme.test", now: harness.clock.unixSeconds, sealer: sealer) == nil)
            #expect(DeviceCookie.throttleKey(other, email: "someone@acme.test", now: harness.clock.unixSeconds + DeviceCookie.lifetime + 1, sealer: sealer) == nil)
            #expect(DeviceCookie.throttleKey(other, email: "someone@acme.test", now: harness.clock.unixSeconds, sealer: sealer) != nil)
        }
    }

    @Test func theLastOwnerCannotBeRemovedOrDemoted() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            try await Self.member(client, "owner@acme.test", role: .owner)
            try await Self.member(client, "second@acme.test", role: .admin)
            // Without an owner of every tenant, acme's only owner is its last.
            try await client.database.sql.raw("DELETE FROM team_memberships WHERE tenant_id = '*'").run()
            let owner = try await Self.signedIn(client, "owner@acme.test")
            let page = try await owner.get("/dashboard/t/acme/team")
            let ownerId = try #require(try await client.database.dashboardUser(email: "owner@acme.test")?.id)
            #expect(page.text.contains("/team/members/\(ownerId)/role"))
            let before = try await Self.snapshot(client)
            let demote = try await owner.post("/dashboard/t/acme/team/members/\(ownerId)/role", [("role", "admin")])
            #expect(demote.status == .seeOther)
            #expect(try await owner.get("/dashboard/t/acme/team").text.contains("no owner"))
            #expect(try await owner.post("/dashboard/t/acme/team/members/\(ownerId)/remove").status == .seeOther)
            #expect(try await Self.snapshot(client) == before)
            #expect(try await client.database.memberships(userId: ownerId).map(\.role) == ["owner"])
            // With a second owner, the first can step down.
            let secondId = try #require(try await client.database.dashboardUser(email: "second@acme.test")?.id)
            _ = try await owner.get("/dashboard/t/acme/team")
            #expect(try await owner.post("/dashboard/t/acme/team/members/\(secondId)/role", [("role", "owner")]).status == .seeOther)
            _ = try await owner.get("/dashboard/t/acme/team")
            #expect(try await owner.post("/dashboard/t/acme/team/members/\(ownerId)/remove").status == .seeOther)
            #expect(try await client.database.memberships(userId: ownerId).isEmpty)
            #expect(try await owner.get("/dashboard/t/acme").status == .notFound)
        }
    }

    // MARK: Invitations, audit, migration

    @Test func invitationsAreMailedWorkOnceAndExpire() async throws {
        let harness = try Self.mailingHarness()
        try await harness.run { client in
            let owner = try await Self.ownerOnTeamPage(client)
            let invited = try await owner.post("/dashboard/t/acme/team/invite", [("email", "new@acme.test"), ("role", "support")])
            #expect(invited.status == .ok && invited.text.contains("Invitation mailed to new@acme.test"))
            // Mailed: the link is in the mail only, not shown to the inviter.
            #expect(!invited.text.contains("/dashboard/invite/"))
            let path = try await Self.invitationPath(client, email: "new@acme.test")
            let mail = try #require(try await client.database.sql.raw("SELECT kind, to_address FROM mail_outbox WHERE kind = 'team_invitation'").first())
            #expect(try mail.decode(column: "to_address", as: String.self) == "new@acme.test")
            // Accepting: a password, then signed in as support.
            let newcomer = DashboardBrowser(client)
            #expect(try await newcomer.get(path).status == .ok)
            let accepted = try await newcomer.post(path, [("password", "a long enough password")])
            #expect(accepted.status == .seeOther && accepted.location == "/dashboard/t/acme")
            let welcome = try await newcomer.get("/dashboard/t/acme")
            #expect(welcome.text.contains("Welcome: you are a member of acme as Support."))
            // Support's menu leaves out what it cannot open.
            #expect(!welcome.text.contains("href=\"/dashboard/signing-keys\"") && !welcome.text.contains("href=\"/dashboard/audit\""))
            #expect(try await client.database.dashboardUser(email: "new@acme.test")?.lastLoginAt != nil)
            #expect(try await newcomer.get("/dashboard/t/acme/p/app/licenses").status == .ok)
            #expect(try await newcomer.get("/dashboard/t/acme/webhooks").status == .forbidden)
            // Used once.
            #expect(try await DashboardBrowser(client).get(path).status == .notFound)
            // Expired after 7 days.
            _ = try await owner.get("/dashboard/t/acme/team")
            _ = try await owner.post("/dashboard/t/acme/team/invite", [("email", "late@acme.test"), ("role", "developer")])
            let latePath = try await Self.invitationPath(client, email: "late@acme.test")
            harness.clock.advance(by: 7 * 86_400 + 1)
            #expect(try await DashboardBrowser(client).get(latePath).status == .notFound)
            let actions = try await DashboardTests.auditActions(client)
            #expect(actions.contains("member.invite") && actions.contains("member.join"))
        }
    }

    @Test func housekeepingForgetsOldSessionsThrottlesAndClosedInvitations() async throws {
        let harness = try Self.mailingHarness()
        try await harness.run { client in
            let owner = try await Self.ownerOnTeamPage(client)
            _ = try await owner.post("/dashboard/t/acme/team/invite", [("email", "late@acme.test"), ("role", "support")])
            _ = try await DashboardBrowser(client).signIn("owner@acme.test", "wrong password")
            let database = client.database
            #expect(try await client.count("SELECT COUNT(*) AS n FROM team_invitations WHERE sealed_token IS NOT NULL") == 1)
            harness.clock.advance(by: 8 * 86_400)
            let now = harness.clock.unixSeconds
            try await database.purgeInvitations(now: now, closedBefore: now - 90 * 86_400)
            // Expired: its link can never work, so its sealed token goes at once; the row stays a while.
            #expect(try await client.count("SELECT COUNT(*) AS n FROM team_invitations WHERE sealed_token IS NOT NULL") == 0)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM team_invitations") == 1)
            try await database.purgeUserSessions(before: now - 86_400)
            try await database.purgeLoginThrottles(before: now - 86_400)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM dashboard_user_sessions") == 0)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM login_throttle") == 0)
            harness.clock.advance(by: 90 * 86_400)
            try await database.purgeInvitations(now: harness.clock.unixSeconds, closedBefore: harness.clock.unixSeconds - 90 * 86_400)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM team_invitations") == 0)
        }
    }

    @Test func theAuditLogNamesEachActorAndFiltersByActor() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let token = try await Self.token(client, ["name": "ops", "tenant_id": "acme", "role": "admin"])
            var headers: HTTPFields = [.contentType: "application/json", .authorization: "Bearer \(token)", .userAgent: "ops-script/1.0"]
            headers[.contentType] = "application/json"
            _ = try await client.request(.post, "/admin/v1/tenants/acme/products/app/licenses/\(seed.licenseId)/suspend", headers: headers)
            try await Self.member(client, "owner@acme.test", role: .owner)
            let browser = try await Self.signedIn(client, "owner@acme.test")
            _ = try await browser.get("/dashboard/t/acme/p/app/licenses/\(seed.licenseId)")
            _ = try await browser.post("/dashboard/t/acme/p/app/licenses/\(seed.licenseId)/reinstate")
            let byToken = try await client.admin(.get, "/audit-log?actor=token:ops")
            let entries = try #require(byToken["entries"] as? [[String: Any]])
            #expect(entries.count == 1 && entries[0]["action"] as? String == "license.suspend")
            #expect(entries[0]["actor_kind"] as? String == "token" && entries[0]["actor_user_agent"] as? String == "ops-script/1.0")
            let users = try #require(try await client.admin(.get, "/audit-log?actor_kind=user")["entries"] as? [[String: Any]])
            #expect(users.contains { $0["action"] as? String == "license.reinstate" && $0["actor"] as? String == "user:owner@acme.test" })
            #expect(users.allSatisfy { $0["actor_kind"] as? String == "user" })
            #expect(users.contains { $0["action"] as? String == "sign_in" })
            #expect(try await client.admin(.get, "/audit-log?actor_kind=robot").status == .badRequest)
            let page = try await browser.get("/dashboard/audit?actor=token%3Aops")
            #expect(page.text.contains("license.suspend") && !page.text.contains("license.reinstate"))
            // The owner's bootstrap token is a token too.
            #expect(try #require(try await client.database.auditLog(limit: 500).first { $0.action == "token.create" }).actorKind == "token")
        }
    }

    @Test(arguments: StorageBackend.available)
    func theMigrationMakesEveryExistingUserAnOwnerOfEveryTenant(backend: StorageBackend) async throws {
        let database = try await backend.open(migrations: Array(Migration.all.prefix { $0.name != "0022_team_access" }))
        do {
            for email in ["a@example.com", "b@example.com"] {
                try await database.sql.raw("""
                    INSERT INTO dashboard_users (id, email, password_hash, failed_logins, locked_until, created_at) VALUES (\(bind: email), \(bind: email), 'x', 0, 0, 1)
                    """).run()
            }
            #expect(try await database.migrate(logger: Harness.logger).first == "0022_team_access")
            for email in ["a@example.com", "b@example.com"] {
                let memberships = try await database.memberships(userId: email)
                #expect(memberships.map(\.tenantId) == ["*"] && memberships.map(\.role) == ["owner"])
            }
        } catch {
            await database.close()
            throw error
        }
        await database.close()
    }

    /// Two processes on one PostgreSQL database: a token revoked through one is refused by the
    /// other on its very next request (nothing is cached).
    @Test(.enabled(if: PrerequisiteGate.enabled(StorageBackend.postgresURL != nil), "needs PostgreSQL: set KEYLIGHT_TEST_POSTGRES_URL (.ci/run does)"))
    func aRevokedTokenIsRefusedAtOnceByEveryPostgresProcess() async throws {
        let first = try await Harness.on(.postgres)
        var other = Harness(clock: first.clock)
        other.configuration = first.configuration
        let second = other
        try await first.run { one in
            try await second.run { two in
                _ = try await one.seed()
                let token = try await Self.token(one, ["name": "ci", "tenant_id": "acme", "role": "read_only"])
                let id = try #require(try await one.admin(.get, "/tokens")["tokens"].flatMap { ($0 as? [[String: Any]])?.first?["id"] as? String })
                #expect(try await two.admin(.get, "/tenants/acme/products", token: token).status == .ok)
                #expect(try await one.admin(.delete, "/tokens/\(id)").status == .noContent)
                #expect(try await two.admin(.get, "/tenants/acme/products", token: token).status == .unauthorized)
                let expiring = try await Self.token(two, ["name": "soon", "tenant_id": "acme", "role": "read_only", "expires_at": first.clock.unixSeconds + 10])
                #expect(try await one.admin(.get, "/tenants/acme/products", token: expiring).status == .ok)
                first.clock.advance(by: 10)
                #expect(try await one.admin(.get, "/tenants/acme/products", token: expiring).status == .unauthorized)
            }
        }
    }
}
