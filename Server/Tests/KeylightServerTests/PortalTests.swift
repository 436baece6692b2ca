import Crypto
import Foundation
import HTTPTypes
import KeylightCore
import KeylightSigning
@testable import KeylightServer
import Testing

/// The customer portal (protocol 6.5) through the router: a browser's cookie jar by hand.
@Suite(.timeLimit(.minutes(6))) struct PortalTests {
    /// One visitor: keeps the portal cookie between requests, as a browser would.
    final class Visitor: @unchecked Sendable {  // used by one test task at a time
        let client: Client
        var cookie: String?
        init(_ client: Client) { self.client = client }

        func get(_ path: String = "/portal/acme/app") async throws -> Reply {
            try keep(try await client.request(.get, path, headers: headers()))
        }

        func post(_ path: String, _ fields: [(String, String)], csrf: String? = nil) async throws -> Reply {
            var headers = headers()
            headers[.contentType] = "application/x-www-form-urlencoded"
            let token = try csrf ?? self.csrf()
            let body = FormEncoding.encode([("_csrf", token)] + fields)
            return try keep(try await client.request(.post, "/portal/acme/app" + path, headers: headers, body: body))
        }

        func upload(_ path: String, file name: String, content: String) async throws -> Reply {
            let boundary = "----keylight\(UUID().uuidString.prefix(8))"
            var headers = headers()
            headers[.contentType] = "multipart/form-data; boundary=\(boundary)"
            let body = "--\(boundary)\r\nContent-Disposition: form-data; name=\"_csrf\"\r\n\r\n\(try csrf())\r\n"
                + "--\(boundary)\r\nContent-Disposition: form-data; name=\"request\"\r\n\r\n\r\n"
                + "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"request.txt\"\r\nContent-Type: text/plain\r\n\r\n\(content)\r\n"
                + "--\(boundary)--\r\n"
            return try keep(try await client.request(.post, "/portal/acme/app" + path, headers: headers, body: body))
        }

        var lastPage = ""

        func csrf() throws -> String {
            let marker = "name=\"_csrf\" value=\""
            guard let start = lastPage.range(of: marker) else { throw CancellationError() }
            return String(lastPage[start.upperBound...].prefix { $0 != "\"" })
        }

        private func headers() -> HTTPFields {
            var headers = HTTPFields()
            if let cookie { headers[.cookie] = cookie }
            return headers
        }

        private func keep(_ reply: Reply) throws -> Reply {
            if let set = reply.headers[.setCookie], let pair = set.split(separator: ";").first {
                cookie = pair.hasSuffix("keylight_portal=") ? nil : String(pair)
            }
            if reply.headers[.contentType]?.hasPrefix("text/html") == true { lastPage = reply.text }
            return reply
        }
    }

    @Test func aCustomerSeesAndFreesDevicesWithTheKeyWhichIsNeverShown() async throws {
        try await Harness().run { client in
            let seed = try await client.seed(limit: 2)
            let instance = try #require(try await client.activate(seed, machine: "m-1", name: "Studio Mac")["instance_id"] as? String)
            let visitor = Visitor(client)
            let start = try await visitor.get()
            #expect(start.status == .ok && start.text.contains("Enter your license key") && start.text.contains("/dashboard/static/dashboard.css"))
            #expect(start.headers[.contentSecurityPolicy]?.contains("form-action 'self'") == true)
            let cookie = try #require(start.headers[.setCookie])
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/portal/acme/app"))

            // A wrong key: the key form again, 404, no license opened.
            let wrong = try await visitor.post("/sign-in", [("license_key", "ACME-0000-0000-0000-0000")])
            #expect(wrong.status == .notFound && wrong.text.contains("No license of this product has that key"))

            let signIn = try await visitor.post("/sign-in", [("license_key", " " + seed.licenseKey.lowercased() + "\n")])
            #expect(signIn.status == .seeOther || signIn.status == .found, "\(signIn.status)")
            let page = try await visitor.get()
            #expect(page.text.contains("Studio Mac") && page.text.contains("1 of 2 in use"))
            #expect(!page.text.contains(seed.licenseKey) && !page.text.contains(String(seed.licenseKey.suffix(14))))
            #expect(page.text.contains(String(seed.licenseKey.suffix(4))))  // the masked key's last group
            #expect(!(visitor.cookie ?? "").contains(seed.licenseKey))

            // Freeing the device: audited as the customer, through the portal.
            let freed = try await visitor.post("/devices/\(instance)/deactivate", [])
            #expect(freed.status == .seeOther || freed.status == .found)
            let after = try await visitor.get()
            #expect(after.text.contains("The device was freed") && after.text.contains("0 of 2 in use"))
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE active") == 0)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE actor = 'customer' AND action = 'instance.deactivate' AND details LIKE '%portal%'") == 1)
            // The notice is shown once.
            #expect(!(try await visitor.get()).text.contains("The device was freed"))
        }
    }

    @Test func formsWithoutTheSessionsTokenChangeNothing() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let instance = try #require(try await client.activate(seed)["instance_id"] as? String)
            let visitor = Visitor(client)
            _ = try await visitor.get()
            _ = try await visitor.post("/sign-in", [("license_key", seed.licenseKey)])
            _ = try await visitor.get()
            // Another site's form: the browser sends the cookie (were it not SameSite) but not the token.
            let forged = try await visitor.post("/devices/\(instance)/deactivate", [], csrf: "not-the-token")
            #expect(forged.status == .forbidden && forged.text.contains("The form expired"))
            // No cookie at all.
            let bare = try await client.request(.post, "/portal/acme/app/devices/\(instance)/deactivate", headers: [.contentType: "application/x-www-form-urlencoded"], body: "_csrf=x")
            #expect(bare.status == .forbidden)
            // A tampered cookie opens nothing.
            var tampered = HTTPFields()
            tampered[.cookie] = "keylight_portal=AAAA" + String(repeating: "B", count: 60)
            tampered[.contentType] = "application/x-www-form-urlencoded"
            #expect(try await client.request(.post, "/portal/acme/app/devices/\(instance)/deactivate", headers: tampered, body: "_csrf=x").status == .forbidden)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE active") == 1)
            // Actions need a key entered first.
            let fresh = Visitor(client)
            _ = try await fresh.get()
            #expect(try await fresh.post("/devices/\(instance)/deactivate", []).status == .forbidden)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE active") == 1)
        }
    }

    @Test func anUploadedRequestFileDownloadsItsResponseAndAProofFreesTheSeat() async throws {
        try await Harness().run { client in
            let seed = try await client.seed(limit: 1)
            let device = Curve25519.Signing.PrivateKey()
            let visitor = Visitor(client)
            _ = try await visitor.get()
            _ = try await visitor.post("/sign-in", [("license_key", seed.licenseKey)])
            _ = try await visitor.get()
            let request = SeatsAndOfflineTests.request(device: device)
            let download = try await visitor.upload("/offline/activate", file: "request_file", content: request)
            #expect(download.status == .ok, "\(download.text)")
            #expect(download.headers[.contentDisposition]?.hasPrefix("attachment; filename=\"keylight-activation-") == true)
            let response = try OfflineActivationResponse(armored: download.text)
            #expect(response.isBound(to: "air-gapped-1", deviceKey: device.publicKey, keyset: try await client.keyset()))
            // The offline device is listed without a "free" button, and freeing it by id is refused.
            let listed = try await visitor.get()
            #expect(listed.text.contains("(offline activation)") && !listed.text.contains("/devices/\(response.instanceId)/deactivate"))
            let byId = try await visitor.post("/devices/\(response.instanceId)/deactivate", [])
            #expect(byId.status == .unprocessableContent && byId.text.contains("activated offline"))

            // A full license: the page again with the reason, 409.
            let full = try await visitor.post("/offline/activate", [("request", SeatsAndOfflineTests.request(machine: "other", device: device))])
            #expect(full.status == .conflict && full.text.contains("All activation slots"))
            let malformed = try await visitor.post("/offline/activate", [("request", "nonsense")])
            #expect(malformed.status == .badRequest && malformed.text.contains("BEGIN"))

            let proof = try OfflineDeactivationProof.sign(instanceId: response.instanceId, issuedAt: 1, with: device).armored
            let forged = try await visitor.post("/offline/deactivate", [("proof", try OfflineDeactivationProof.sign(instanceId: response.instanceId, issuedAt: 1, with: .init()).armored)])
            #expect(forged.status == .unprocessableContent && forged.text.contains("not signed by the device"))
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE active") == 1)
            let freed = try await visitor.post("/offline/deactivate", [("proof", proof)])
            #expect(freed.status == .seeOther || freed.status == .found)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE active") == 0)
            let actors = try await client.database.sql.raw("SELECT actor FROM audit_log WHERE action LIKE 'instance.%' ORDER BY id").all(decodingColumn: "actor", as: String.self)
            #expect(actors == ["offline", "offline"])
        }
    }

    @Test func aPortalSwitchedOffIsNotFoundAndAddressesAndLicensesAreLimited() async throws {
        var harness = Harness()
        harness.configuration.limits.portalPerAddress = RateLimit(perMinute: 60, burst: 5)
        harness.configuration.limits.portalPerLicense = RateLimit(perMinute: 60, burst: 3)
        try await harness.run { client in
            let seed = try await client.seed()
            // `portal` is the server's own first path segment: no tenant may take it.
            let reserved = try await client.admin(.post, "/tenants", ["id": "portal", "name": "Portal"])
            #expect(reserved.status == .badRequest && reserved.text.contains("reserved"))
            #expect(try await client.request(.get, "/portal/acme/nope").status == .notFound)
            #expect(try await client.admin(.patch, "/tenants/acme/products/app", ["portal_enabled": false])["portal_enabled"] as? Bool == false)
            let closed = try await client.request(.get, "/portal/acme/app")
            #expect(closed.status == .notFound && !closed.text.contains("license_key"))
            #expect(try await client.admin(.patch, "/tenants/acme/products/app", ["portal_enabled": true]).status == .ok)

            let visitor = Visitor(client)
            _ = try await visitor.get()
            _ = try await visitor.post("/sign-in", [("license_key", seed.licenseKey)])  // license 1
            _ = try await visitor.get()
            for _ in 0..<2 { #expect(try await visitor.post("/offline/activate", [("request", "x")]).status == .badRequest) }  // license 2, 3
            let limited = try await visitor.post("/offline/activate", [("request", "x")])
            #expect(limited.status == .tooManyRequests && limited.headers[.retryAfter] != nil)
            // The address's own limit (5 forms) is reached too: even a sign-in is refused.
            let address = try await visitor.post("/sign-in", [("license_key", seed.licenseKey)])
            #expect(address.status == .tooManyRequests)
        }
    }

    @Test(arguments: [
        ("", "b"), ("--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue", "b"),
        (String(repeating: "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n", count: 20) + "--b--", "b"),
        ("--b\r\n" + String(repeating: "X", count: 2_000) + "\r\n\r\nv\r\n--b--", "b"),
        ("--bX\r\n\r\n--b--", "b"),
    ])
    func malformedMultipartBodiesAreRefused(body: String, boundary: String) {
        #expect(throws: MultipartForm.Malformed.self) { try MultipartForm(body: Array(body.utf8), boundary: boundary) }
    }

    @Test func multipartBodiesAndBoundariesAreReadAsBrowsersSendThem() throws {
        #expect(MultipartForm.boundary(contentType: "multipart/form-data; boundary=----WebKitFormBoundaryAbC") == "----WebKitFormBoundaryAbC")
        #expect(MultipartForm.boundary(contentType: "Multipart/Form-Data; charset=utf-8; boundary=\"a b\"") == "a b")
        #expect(MultipartForm.boundary(contentType: "application/x-www-form-urlencoded") == nil)
        #expect(MultipartForm.boundary(contentType: "multipart/form-data; boundary=" + String(repeating: "x", count: 71)) == nil)
        let body = "preamble\r\n--b\r\nContent-Disposition: form-data; name=\"_csrf\"\r\n\r\ntok\r\n--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nline1\r\nline2\r\n--b\r\nContent-Disposition: form-data; name=\"_csrf\"\r\n\r\nsecond\r\n--b--\r\n"
        let form = try MultipartForm(body: Array(body.utf8), boundary: "b")
        #expect(form["_csrf"] == "tok" && form["f"] == "line1\r\nline2")
    }
}
