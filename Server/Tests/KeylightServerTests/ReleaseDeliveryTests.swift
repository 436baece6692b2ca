import Crypto
import Foundation
import HTTPTypes
import KeylightCore
@testable import KeylightServer
import NIOCore
import SQLKit
import Testing

/// Releases as clients meet them (issue 51): uploads signed by the server or checked against the
/// developer's key, the per-license appcast, downloads by link and lease, and the JSON check.
@Suite(.timeLimit(.minutes(6))) struct ReleaseDeliveryTests {
    static let path = "/tenants/acme/products/app/releases"

    /// A small but real zip archive (an empty one: end-of-central-directory only, after a local header magic).
    static func zip(_ size: Int = 4_096, seed: UInt8 = 1) -> [UInt8] {
        [0x50, 0x4B, 0x03, 0x04] + (0..<(size - 4)).map { UInt8(truncatingIfNeeded: Int($0) &* 31 &+ Int(seed)) }
    }

    /// A draft with a file, published unless told otherwise; answers its id.
    static func release(_ client: Client, version: String, short: String, releasedAt: Int64, channel: String? = nil, bytes: [UInt8]? = nil, publish: Bool = true) async throws -> String {
        var body: [String: Any] = ["version": version, "short_version": short, "released_at": releasedAt, "notes_markdown": "## \(short)\n- *New* things & more"]
        if let channel { body["channel"] = channel }
        let created = try await client.admin(.post, Self.path, body)
        #expect(created.status == .created, "\(created.text)")
        let id = try #require(created["id"] as? String)
        let uploaded = try await upload(client, id, bytes ?? zip(seed: UInt8(truncatingIfNeeded: version.hashValue)))
        #expect(uploaded.status == .created, "\(uploaded.text)")
        if publish { #expect(try await client.admin(.post, "\(Self.path)/\(id)/publish").status == .ok) }
        return id
    }

    static func upload(_ client: Client, _ id: String, _ bytes: [UInt8], query: String = "platform=darwin&arch=universal", token: String = Harness.adminToken) async throws -> Reply {
        try await client.client.execute(
            uri: "/admin/v1\(Self.path)/\(id)/artifacts?\(query)", method: .put,
            headers: [.authorization: "Bearer \(token)", .contentType: "application/octet-stream"], body: ByteBuffer(bytes: bytes)
        ) { Reply(status: $0.status, headers: $0.headers, body: Data($0.body.readableBytesView)) }
    }

    /// The lease of an activation, as the header carries it.
    static func leaseHeader(_ reply: Reply) throws -> String {
        let lease = try #require(reply["lease"] as? [String: Any])
        return Base64.encodeURLSafe(try JSONSerialization.data(withJSONObject: lease))
    }

    static func get(_ client: Client, _ uri: String, lease: String? = nil, headers extra: HTTPFields = [:]) async throws -> Reply {
        var headers = extra
        if let lease { headers[HTTPField.Name("X-Keylight-Lease")!] = lease }
        return try await client.request(.get, uri, headers: headers)
    }

    /// The items of an appcast: version, whether it is informational, the enclosure URL.
    static func items(_ xml: String) -> [(version: String, informational: Bool, url: String?)] {
        xml.components(separatedBy: "<item>").dropFirst().map { item in
            let version = item.components(separatedBy: "<sparkle:version>").dropFirst().first?.components(separatedBy: "<").first ?? ""
            let url = item.components(separatedBy: "<enclosure url=\"").dropFirst().first?.components(separatedBy: "\"").first?.replacingOccurrences(of: "&amp;", with: "&")
            return (version, item.contains("<link>") && url == nil, url)
        }
    }

    /// The path and query of a link the feed gave (the test client takes paths).
    static func local(_ url: String) -> String {
        String(url.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" })
    }

    @Test func serverSignedUploadsVerifyAndLandOnDiskPrivately() async throws {
        let harness = Harness()
        try await harness.run { client in
            _ = try await client.seed()
            let bytes = Self.zip(100_000)
            let created = try await client.admin(.post, Self.path, ["version": "10", "short_version": "1.0"])
            let id = try #require(created["id"] as? String)
            let product = try await client.admin(.get, "/tenants/acme/products/app")
            let keyText = try #require(product["sparkle_public_key"] as? String)
            let publicKey = try Curve25519.Signing.PublicKey(rawRepresentation: try #require(Data(base64Encoded: keyText)))
            #expect(product["server_signs_updates"] as? Bool == true && product["public_feed"] as? Bool == false)
            let reply = try await Self.upload(client, id, bytes)
            #expect(reply.status == .created, "\(reply.text)")
            #expect(reply["length"] as? Int == bytes.count && reply["signed_by"] as? String == "server" && reply["file_name"] as? String == "app-1.0.zip")
            #expect(reply["sha256"] as? String == SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined())
            let signatureText = try #require(reply["ed_signature"] as? String)
            let signature = try #require(Data(base64Encoded: signatureText))
            #expect(publicKey.isValidSignature(signature, for: bytes))
            #expect(!publicKey.isValidSignature(signature, for: bytes.dropLast() + [0]))
            // On disk by hash, 0600 in 0700 folders, nothing left in incoming/.
            let store = try #require(client.server.releases).store
            let file = store.path(sha256: try #require(reply["sha256"] as? String))
            #expect(FileManager.default.contents(atPath: file).map(Array.init) == bytes)
            #expect(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int == 0o600)
            #expect(try FileManager.default.attributesOfItem(atPath: store.directory)[.posixPermissions] as? Int == 0o700)
            #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory + "/incoming").isEmpty)
            #expect(try await DashboardTests.auditActions(client).contains("release.artifact"))
        }
    }

    @Test func aDevelopersOwnKeyIsCheckedAndBadFilesChangeNothing() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            let developer = Curve25519.Signing.PrivateKey()
            let set = try await client.admin(.patch, "/tenants/acme/products/app", ["sparkle_public_key": developer.publicKey.rawRepresentation.base64EncodedString()])
            #expect(set.status == .ok && set["server_signs_updates"] as? Bool == false, "\(set.text)")
            #expect(try await client.admin(.patch, "/tenants/acme/products/app", ["sparkle_public_key": "bm90IGEga2V5"]).status == .badRequest)
            let id = try #require(try await client.admin(.post, Self.path, ["version": "10", "short_version": "1.0"])["id"] as? String)
            let bytes = Self.zip()
            let good = try developer.signature(for: bytes)
            let urlSafe = Base64.encodeURLSafe(good)
            let before = try await client.count("SELECT COUNT(*) AS n FROM release_artifacts")
            for (query, code) in [
                ("platform=darwin", "INVALID_REQUEST"), // the server holds no key to sign with
                ("platform=darwin&signature=\(Base64.encodeURLSafe(try developer.signature(for: bytes + [1])))", "BAD_SIGNATURE"),
                ("platform=darwin&signature=abc", "INVALID_REQUEST"),
                ("platform=beos&signature=\(urlSafe)", "INVALID_REQUEST"),
                ("platform=darwin&arch=ARM&signature=\(urlSafe)", "INVALID_REQUEST"),
                ("platform=darwin&signature=\(urlSafe)&filename=App.dmg", "INVALID_REQUEST"), // a zip named .dmg
                ("platform=darwin&signature=\(urlSafe)&filename=../x.zip", "INVALID_REQUEST"),
            ] {
                let reply = try await Self.upload(client, id, bytes, query: query)
                #expect(reply.status == .badRequest && reply.code == code, "\(query): \(reply.status) \(reply.text)")
            }
            // A Windows installer is no Sparkle archive.
            let exe = Array("MZ".utf8) + [UInt8](repeating: 7, count: 100)
            #expect(try await Self.upload(client, id, exe, query: "platform=macos&signature=\(Base64.encodeURLSafe(try developer.signature(for: exe)))").status == .badRequest)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM release_artifacts") == before)
            let store = try #require(client.server.releases).store
            #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory + "/incoming").isEmpty)
            // The signature sign_update printed (standard base64), URL-safe in the query, stored standard.
            let reply = try await Self.upload(client, id, bytes, query: "platform=macos&arch=universal&signature=\(urlSafe)&filename=App-1.0.zip")
            #expect(reply.status == .created && reply["signed_by"] as? String == "developer" && reply["platform"] as? String == "darwin", "\(reply.text)")
            #expect(reply["ed_signature"] as? String == good.base64EncodedString() && reply["file_name"] as? String == "App-1.0.zip")
            // A published release takes no more files.
            #expect(try await client.admin(.post, "\(Self.path)/\(id)/publish").status == .ok)
            #expect(try await Self.upload(client, id, bytes, query: "platform=darwin&signature=\(urlSafe)").code == "RELEASE_STATE")
        }
    }

    @Test func theAppcastOffersCoveredBuildsAndAPaidUpgradeBeyond() async throws {
        let harness = Harness()
        try await harness.run { client in
            let now = harness.clock.unixSeconds
            let seed = try await client.seed(keyTypeFields: ["updates_days": 365])
            let activation = try await client.activate(seed)
            let lease = try Self.leaseHeader(activation)
            let old = try await Self.release(client, version: "100", short: "1.0", releasedAt: now - 100 * 86_400)
            let covered = try await Self.release(client, version: "110", short: "1.1", releasedAt: now - 86_400)
            _ = try await Self.release(client, version: "120b1", short: "1.2 beta", releasedAt: now - 3_600, channel: "beta")
            let beyond = try await Self.release(client, version: "200", short: "2.0", releasedAt: now)
            _ = try await Self.release(client, version: "90", short: "0.9", releasedAt: now - 200 * 86_400, publish: false)
            // The update window ends a year from now; move 2.0's date past it.
            try await client.database.sql.raw("UPDATE releases SET released_at = \(bind: now + 400 * 86_400) WHERE id = \(bind: beyond)").run()
            client.server.releases?.forgetFeed(tenantId: "acme", productId: "app")

            let feed = try await Self.get(client, "/acme/app/appcast.xml", lease: lease)
            #expect(feed.status == .ok, "\(feed.text)")
            #expect(feed.headers[.contentType] == "application/rss+xml; charset=utf-8" && feed.headers[.cacheControl] == "private, no-cache")
            let items = Self.items(feed.text)
            // The paid upgrade first (informational, no file), then the newest covered build; no draft,
            // no beta, and not 1.0, which Sparkle would never pick over 1.1 (no condition rules 1.1 out).
            #expect(items.map(\.version) == ["200", "110"], "\(feed.text)")
            #expect(items.map(\.informational) == [true, false])
            #expect(feed.text.contains("/portal/acme/app</link><sparkle:minimumAutoupdateVersion>110</sparkle:minimumAutoupdateVersion>"))
            #expect(feed.text.contains("xmlns:sparkle=\"http://www.andymatuschak.org/xml-namespaces/sparkle\""))
            #expect(feed.text.contains("<description><![CDATA[<h2>1.1</h2>\n<ul><li><em>New</em> things &amp; more</li></ul>]]></description>"))
            // The beta channel adds the beta build, tagged.
            let beta = try await Self.get(client, "/acme/app/appcast.xml?channel=beta", lease: lease)
            #expect(Self.items(beta.text).map(\.version) == ["200", "120b1", "110"] && beta.text.contains("<sparkle:channel>beta</sparkle:channel>"))
            // Same feed, same ETag: 304.
            let etag = try #require(feed.headers[.eTag])
            #expect(try await Self.get(client, "/acme/app/appcast.xml", lease: lease, headers: [.ifNoneMatch: etag]).status == .notModified)

            // The covered build downloads with its link; a range resumes it.
            let link = Self.local(try #require(items[1].url))
            #expect(link.hasPrefix("/acme/app/downloads/\(covered)/darwin/universal/app-1.1.zip?token="))
            let whole = try await Self.get(client, link, lease: lease)
            #expect(whole.status == .ok && whole.headers[.contentDisposition] == "attachment; filename=\"app-1.1.zip\"", "\(whole.status) \(whole.text)")
            let part = try await Self.get(client, link, headers: [.range: "bytes=100-199"])
            #expect(part.status == .partialContent && part.body == whole.body[100..<200] && part.headers[.contentRange] == "bytes 100-199/\(whole.body.count)")
            #expect(try await Self.get(client, link, headers: [.range: "bytes=-10"]).body == whole.body.suffix(10))
            #expect(try await Self.get(client, link, headers: [.range: "bytes=999999-"]).status == .rangeNotSatisfiable)
            #expect(try await Self.get(client, link, headers: [.ifNoneMatch: try #require(whole.headers[.eTag])]).status == .notModified)
            // Counted once: the range from 100 is a resume.
            #expect(try await client.database.downloadCounts(releaseIds: [covered])[covered] == 1)

            // A link past its hour: refused alone, served with the device's lease.
            harness.clock.advance(by: 7_200)
            #expect(try await Self.get(client, link).code == "DOWNLOAD_LINK_EXPIRED")
            #expect(try await Self.get(client, link, lease: lease).status == .ok)
            // Another device's lease does not take this device's link.
            let other = try await client.activate(seed, machine: "machine-2", name: "Other Mac")
            #expect(try await Self.get(client, link, lease: try Self.leaseHeader(other)).code == "DOWNLOAD_LINK_INVALID")
            // A tampered token.
            #expect(try await Self.get(client, String(link.dropLast(3)) + "AAA").code == "DOWNLOAD_LINK_INVALID")
            // The lease alone downloads what it covers, and not the build beyond its window.
            #expect(try await Self.get(client, link.components(separatedBy: "?")[0], lease: lease).status == .ok)
            #expect(try await Self.get(client, "/acme/app/downloads/\(beyond)/darwin/universal/app-2.0.zip", lease: lease).code == "NOT_COVERED")
            #expect(try await Self.get(client, "/acme/app/downloads/\(beyond)/darwin/universal/app-2.0.zip").code == "LEASE_REQUIRED")

            // A yanked build leaves the feed (1.0 is then the newest covered one) and its links stop.
            #expect(try await client.admin(.post, "\(Self.path)/\(covered)/yank").status == .ok)
            let afterYank = try await Self.get(client, "/acme/app/appcast.xml", lease: lease)
            #expect(Self.items(afterYank.text).map(\.version) == ["200", "100"] && afterYank.text.contains("/downloads/\(old)/"))
            #expect(try await Self.get(client, link, lease: lease).status == .notFound)
        }
    }

    @Test func leasesAreCheckedAndAPublicFeedNeedsNone() async throws {
        let harness = Harness()
        try await harness.run { client in
            let now = harness.clock.unixSeconds
            let seed = try await client.seed(ttl: 3_600)
            let lease = try Self.leaseHeader(try await client.activate(seed))
            _ = try await Self.release(client, version: "100", short: "1.0", releasedAt: now - 86_400)
            #expect(try await Self.get(client, "/acme/app/appcast.xml").code == "LEASE_REQUIRED")
            #expect(try await Self.get(client, "/acme/app/appcast.xml", lease: lease).status == .ok)
            // Tampered: another instance id under the same signature.
            let leaseJSON = try #require(Base64.decode(lease))
            var fields = try #require(try JSONSerialization.jsonObject(with: leaseJSON) as? [String: Any])
            fields["instanceId"] = UUID().uuidString.lowercased()
            let tampered = Base64.encodeURLSafe(try JSONSerialization.data(withJSONObject: fields))
            #expect(try await Self.get(client, "/acme/app/appcast.xml", lease: tampered).code == "INVALID_LEASE")
            #expect(try await Self.get(client, "/acme/app/appcast.xml", lease: "%%%").code == "INVALID_LEASE")
            // Another product's lease.
            _ = try await client.admin(.post, "/tenants/acme/products", ["id": "other", "name": "Other", "key_prefix": "OTHR"])
            _ = try await client.admin(.patch, "/tenants/acme/products/other", ["public_feed": true])
            #expect(try await Self.get(client, "/acme/other/appcast.xml", lease: lease).code == "INVALID_LEASE")
            // A public feed answers without a lease, and its links need no token.
            #expect(try await client.admin(.patch, "/tenants/acme/products/app", ["public_feed": true])["public_feed"] as? Bool == true)
            let open = try await Self.get(client, "/acme/app/appcast.xml")
            #expect(open.status == .ok && open.headers[.cacheControl] == "public, max-age=300")
            let url = try #require(Self.items(open.text).first?.url)
            let openDownload = try await Self.get(client, Self.local(url))
            #expect(!url.contains("token=") && openDownload.status == .ok)
            // An expired lease is refused even where the feed is public: it is not quietly no lease.
            harness.clock.advance(by: 7_200)
            #expect(try await Self.get(client, "/acme/app/appcast.xml", lease: lease).code == "INVALID_LEASE")
            // A revoked license's lease is refused.
            _ = try await client.admin(.patch, "/tenants/acme/products/app", ["public_feed": false])
            let fresh = try Self.leaseHeader(try await client.validate(seed, instance: try #require(try await client.activate(seed)["instance_id"] as? String)))
            #expect(try await client.admin(.post, "/tenants/acme/products/app/licenses/\(seed.licenseId)/revoke").status == .ok)
            #expect(try await Self.get(client, "/acme/app/appcast.xml", lease: fresh).code == "LICENSE_REVOKED")
        }
    }

    @Test func theJSONCheckAnswersTheNewestCoveredBuildOr204() async throws {
        let harness = Harness()
        try await harness.run { client in
            let now = harness.clock.unixSeconds
            let seed = try await client.seed()
            let lease = try Self.leaseHeader(try await client.activate(seed))
            _ = try await Self.release(client, version: "100", short: "1.0.0", releasedAt: now - 86_400)
            let newest = try await Self.release(client, version: "110", short: "1.1.0", releasedAt: now - 3_600)
            let reply = try await Self.get(client, "/acme/app/updates/latest?current=1.0.0&target=darwin&arch=aarch64", lease: lease)
            #expect(reply.status == .ok, "\(reply.text)")
            #expect(reply["version"] as? String == "1.1.0" && (reply["url"] as? String)?.contains("/downloads/\(newest)/darwin/universal/") == true)
            #expect(reply["pub_date"] as? String == AppcastRenderer.rfc3339(now - 3_600) && (reply["signature"] as? String)?.isEmpty == false)
            #expect(try await Self.get(client, "/acme/app/updates/latest?current=1.1.0&target=darwin", lease: lease).status == .noContent)
            #expect(try await Self.get(client, "/acme/app/updates/latest?current=1.0.0&target=windows", lease: lease).status == .noContent)
            #expect(try await Self.get(client, "/acme/app/updates/latest?target=darwin", lease: lease).status == .badRequest)
            #expect(try await Self.get(client, "/acme/app/updates/latest?current=1.0.0").code == "LEASE_REQUIRED")
        }
    }

    @Test func anUploadCutOffOrStalledLeavesNothing() async throws {
        try await HardeningTests.live({
            // The idle limit is three times the gap between the stalled upload's sends, so a loaded
            // machine that oversleeps a gap does not close a connection that is still sending.
            $0.configuration.connections.uploadIdleTimeout = .seconds(3)
            $0.configuration.connections.requestTimeout = .seconds(1)
            $0.configuration.releases.maxArtifactBytes = 50_000
        }) { client, port in
            _ = try await client.seed()
            let id = try #require(try await client.admin(.post, Self.path, ["version": "10", "short_version": "1.0"])["id"] as? String)
            let store = try #require(client.server.releases).store
            let head = "PUT /admin/v1\(Self.path)/\(id)/artifacts?platform=darwin HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(Harness.adminToken)\r\nContent-Type: application/octet-stream\r\n"
            // Cut off half-way: the client goes away.
            let cut = try await RawConnection.open(port: port)
            try await cut.send(head + "Content-Length: 20000\r\n\r\n" + String(repeating: "P", count: 10_000))
            try await Task.sleep(for: .milliseconds(300))
            cut.close()
            // Stalled: bytes keep coming past the 1 s request timeout (the upload is exempt), then stop.
            let stalled = try await RawConnection.open(port: port)
            try await stalled.send(head + "Content-Length: 20000\r\n\r\nPK\u{03}\u{04}")
            for _ in 0..<4 {
                try await Task.sleep(for: .milliseconds(500))
                try await stalled.send(String(repeating: "Q", count: 1_000))
            }
            #expect(stalled.channel.isActive, "an upload that keeps sending outlives the request timeout")
            #expect(try await stalled.readUntilClosed(timeout: .seconds(10)) != nil, "a stalled upload is closed")
            // Too large: refused by its Content-Length before a byte is stored.
            let big = try await client.client.execute(
                uri: "/admin/v1\(Self.path)/\(id)/artifacts?platform=darwin", method: .put,
                headers: [.authorization: "Bearer \(Harness.adminToken)"], body: ByteBuffer(bytes: Self.zip(60_000))
            ) { $0.status }
            #expect(big == .contentTooLarge)
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await client.count("SELECT COUNT(*) AS n FROM release_artifacts") == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory + "/incoming").isEmpty)
            #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory).sorted() == ["incoming"])
            // The same route still takes a whole file.
            #expect(try await Self.upload(client, id, Self.zip(10_000)).status == .created)
        }
    }

    @Test func theBuyersAccountOffersTheNewestBuildEachLicenseCovers() async throws {
        let harness = try AccountTests.harness()
        try await harness.run { client in
            let now = client.clock.unixSeconds
            let seed = try await client.seed(keyTypeFields: ["updates_days": 365])
            // A second license of the same buyer, of a key type without an update window.
            _ = try await client.admin(.post, "/tenants/acme/products/app/key-types", [
                "id": "lifetime", "display_name": "Lifetime", "activation_limit": 2, "duration_days": NSNull(), "fallback_access": false, "entitlements": ["pro"],
            ])
            let unbounded = try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": "lifetime", "customer_email": "buyer@example.com"])
            let unboundedId = try #require(unbounded["id"] as? String)
            _ = try await Self.release(client, version: "100", short: "1.0", releasedAt: now - 100 * 86_400)
            let covered = try await Self.release(client, version: "110", short: "1.1", releasedAt: now - 86_400)
            _ = try await Self.release(client, version: "120b1", short: "1.2b1", releasedAt: now - 3_600, channel: "beta")
            let beyond = try await Self.release(client, version: "200", short: "2.0", releasedAt: now)
            try await client.database.sql.raw("UPDATE releases SET released_at = \(bind: now + 400 * 86_400) WHERE id = \(bind: beyond)").run()
            client.server.releases?.forgetFeed(tenantId: "acme", productId: "app")

            let browser = AccountTests.Browser(client)
            _ = try await browser.get()
            _ = try await browser.post("/request-link", [("email", "buyer@example.com")])
            let link = try #require(try await AccountTests.link(client, to: "buyer@example.com"))
            let path = String(link.dropFirst("https://licenses.acme.example".count))
            _ = try await browser.get(path)
            _ = try await browser.post("/sign-in", [("token", String(path.split(separator: "=").last ?? ""))])
            let page = try await browser.get()
            // Each license's card offers the newest stable build it covers: 1.1 for the one with a
            // year of updates, 2.0 for the one without a window; never the beta.
            func offered(_ licenseId: String) -> String? {
                guard let card = page.text.components(separatedBy: "id=\"license-\(licenseId)\"").dropFirst().first?.components(separatedBy: "</section>").first,
                      let anchor = card.components(separatedBy: "class=\"newest-build\"><a href=\"").dropFirst().first else { return nil }
                return String(anchor.prefix { $0 != "\"" })
            }
            let windowed = try #require(offered(seed.licenseId), "\(page.text)")
            #expect(windowed.hasPrefix("/acme/app/downloads/\(covered)/darwin/universal/app-1.1.zip?token="))
            #expect(try #require(offered(unboundedId)).hasPrefix("/acme/app/downloads/\(beyond)/darwin/universal/app-2.0.zip?token="))
            #expect(!page.text.contains("1.2b1"))
            // The link downloads in the browser, which has no lease.
            let file = try await Self.get(client, windowed)
            #expect(file.status == .ok && file.headers[.contentDisposition] == "attachment; filename=\"app-1.1.zip\"")

            // A device of the license without a window sees every build as an ordinary item: 2.0,
            // which rules out everything older for Sparkle, and no paid upgrade.
            let lease = try Self.leaseHeader(try await client.activate(seed, key: try #require(unbounded["license_key"] as? String), machine: "m-9"))
            let feed = Self.items(try await Self.get(client, "/acme/app/appcast.xml", lease: lease).text)
            #expect(feed.map(\.version) == ["200"] && feed.map(\.informational) == [false])
        }
    }

    @Test func aFrontProxyIsHandedTheFile() async throws {
        var harness = Harness()
        harness.configuration.releases.accelRedirectPrefix = "/protected-artifacts/"
        try await harness.run { client in
            _ = try await client.seed()
            _ = try await client.admin(.patch, "/tenants/acme/products/app", ["public_feed": true])
            let id = try await Self.release(client, version: "10", short: "1.0", releasedAt: client.clock.unixSeconds - 60)
            let sha = try #require(try await client.database.artifacts(releaseIds: [id]).first?.sha256)
            let reply = try await Self.get(client, "/acme/app/downloads/\(id)/darwin/universal/app-1.0.zip")
            // The proxy sends the bytes: the answer names the file by its hash, under the internal prefix.
            #expect(reply.status == .ok && reply.body.isEmpty)
            #expect(reply.headers[HTTPField.Name("X-Accel-Redirect")!] == "/protected-artifacts/\(sha.prefix(2))/\(sha)")
            #expect(reply.headers[.contentDisposition] == "attachment; filename=\"app-1.0.zip\"" && reply.headers[.eTag] == "\"\(sha)\"")
            #expect(try await client.database.downloadCounts(releaseIds: [id])[id] == 1)
        }
    }

    @Test func theFeedListsTheBuildsSparkleCouldPick() {
        func release(_ version: String, channel: String = "stable", minimum: String? = nil, phased: Int64? = nil, at: Int64 = 0) -> Release {
            Release(id: version, tenantId: "t", productId: "p", version: version, shortVersion: version, channel: channel, releasedAt: at,
                    minSystemVersion: minimum, notesMarkdown: "", critical: false, criticalBelow: nil, phasedRolloutSeconds: phased, state: .published, createdAt: 0)
        }
        func choices(_ releases: [Release], now: Int64 = 1_000_000) -> [String] { ReleaseService.sparkleChoices(releases, now: now).map(\.version) }
        // A build on macOS 14 only: older Macs need the one before it, which settles the rest.
        #expect(choices([release("5", minimum: "14.0"), release("4"), release("3")]) == ["5", "4"])
        // A rollout under way may hold the newest back; one that has run its seven groups does not.
        #expect(choices([release("5", phased: 86_400, at: 1_000_000 - 86_400), release("4"), release("3")]) == ["5", "4"])
        #expect(choices([release("5", phased: 86_400, at: 1_000_000 - 6 * 86_400), release("4")]) == ["5"])
        // A beta build settles only older betas: apps without beta still need the stable build.
        #expect(choices([release("6b", channel: "beta"), release("5b", channel: "beta"), release("5"), release("4")]) == ["6b", "5"])
        #expect(choices([release("6"), release("5b", channel: "beta")]) == ["6"])
        #expect(choices([]) == [])
    }

    @Test func versionsCompareAsSparkleDoes() {
        #expect(SparkleVersion.compare("1.0", "1.0.0") == 0)
        #expect(SparkleVersion.compare("1.10", "1.9") == 1)
        #expect(SparkleVersion.compare("1.0b1", "1.0") == -1)
        #expect(SparkleVersion.compare("2.0", "10") == -1)
        #expect(SparkleVersion.compare("100", "99") == 1)
        #expect(SparkleVersion.compare("1.0.1", "1.0") == 1)
        #expect(SparkleVersion.compare("1.0a", "1.0b") == -1)
    }

    @Test func rangesAndDatesAreReadAndWrittenExactly() {
        #expect(ByteRange.parse("bytes=0-9", length: 100) == .part(0...9))
        #expect(ByteRange.parse("bytes=90-", length: 100) == .part(90...99))
        #expect(ByteRange.parse("bytes=-5", length: 100) == .part(95...99))
        #expect(ByteRange.parse("bytes=50-500", length: 100) == .part(50...99))
        #expect(ByteRange.parse("bytes=100-", length: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=0-1,5-6", length: 100) == .whole)
        #expect(ByteRange.parse("items=0-1", length: 100) == .whole)
        #expect(ByteRange.parse("bytes=9-1", length: 100) == .whole)
        #expect(AppcastRenderer.rfc822(0) == "Thu, 01 Jan 1970 00:00:00 +0000")
        #expect(AppcastRenderer.rfc822(1_795_780_800) == "Fri, 27 Nov 2026 12:00:00 +0000")
        #expect(AppcastRenderer.rfc3339(1_795_780_800) == "2026-11-27T12:00:00Z")
        #expect(AppcastRenderer.cdata("a]]>b") == "<![CDATA[a]]]]><![CDATA[>b]]>")
        #expect(RequestProgressHandler.isArtifactUpload("/admin/v1/tenants/a/products/b/releases/c/artifacts?platform=darwin"))
        #expect(!RequestProgressHandler.isArtifactUpload("/admin/v1/tenants/a/products/b/releases/c/publish"))
        #expect(ArtifactKind.detect(head: Array("xar!".utf8), tail: []) == .pkg && ArtifactKind.claimed(by: "A.tar.gz") == .tarGz)
        #expect(ArtifactKind.detect(head: [1, 2], tail: Array("koly".utf8) + [UInt8](repeating: 0, count: 508)) == .dmg)
    }
}
