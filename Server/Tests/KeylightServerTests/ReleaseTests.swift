import Foundation
@testable import KeylightServer
import SQLKit
import Testing

/// Releases through the admin API (issue 51, first part): drafts, publish, yank, the checks on
/// their fields, the notes' HTML, and a CI token that can publish and do nothing else.
@Suite(.timeLimit(.minutes(6))) struct ReleaseTests {
    static let path = "/tenants/acme/products/app/releases"

    /// The release's file, uploaded through the admin API (with `token`).
    static func addArtifact(_ client: Client, releaseId: String, token: String = Harness.adminToken) async throws {
        let reply = try await ReleaseDeliveryTests.upload(client, releaseId, ReleaseDeliveryTests.zip(), token: token)
        #expect(reply.status == .created, "\(reply.text)")
    }

    @Test func draftsArePublishedWithAFileAndYanked() async throws {
        let harness = Harness()
        try await harness.run { client in
            _ = try await client.seed()
            let created = try await client.admin(.post, Self.path, [
                "version": "412", "short_version": "2.4.0", "min_system_version": "13.0", "notes_markdown": "## New\n- Faster *sync*",
                "critical_below": "400", "phased_rollout_interval_seconds": 86_400,
            ])
            #expect(created.status == .created, "\(created.text)")
            let id = try #require(created["id"] as? String)
            #expect(created["state"] as? String == "draft" && created["channel"] as? String == "stable")
            #expect(created["released_at"] as? Int64 == harness.clock.unixSeconds && created["critical"] as? Bool == true)
            #expect(created["notes_html"] as? String == "<h2>New</h2>\n<ul><li>Faster <em>sync</em></li></ul>")
            // One version per channel; another channel may have it.
            #expect(try await client.admin(.post, Self.path, ["version": "412", "short_version": "2.4.0"]).status == .conflict)
            #expect(try await client.admin(.post, Self.path, ["version": "412", "short_version": "2.4.0-beta", "channel": "beta"]).status == .created)
            // Publishing needs a file.
            let early = try await client.admin(.post, "\(Self.path)/\(id)/publish")
            #expect(early.status == .conflict && early.code == "NO_ARTIFACT")
            try await Self.addArtifact(client, releaseId: id)
            let published = try await client.admin(.post, "\(Self.path)/\(id)/publish")
            #expect(published.status == .ok && published["state"] as? String == "published")
            #expect((published["artifacts"] as? [[String: Any]])?.first?["platform"] as? String == "darwin")
            #expect(try await client.admin(.post, "\(Self.path)/\(id)/publish").code == "RELEASE_STATE")
            #expect(try await client.admin(.post, "\(Self.path)/\(id)/yank")["state"] as? String == "yanked")
            #expect(try await client.admin(.post, "\(Self.path)/\(id)/yank").code == "RELEASE_STATE")
            // Lists and reads.
            let all = try #require(try await client.admin(.get, Self.path)["releases"] as? [[String: Any]])
            #expect(all.count == 2)
            let beta = try #require(try await client.admin(.get, Self.path + "?channel=beta")["releases"] as? [[String: Any]])
            #expect(beta.map { $0["channel"] as? String } == ["beta"])
            #expect(try await client.admin(.get, "\(Self.path)/\(id)")["yanked_at"] as? Int64 == harness.clock.unixSeconds)
            #expect(try await client.admin(.get, "\(Self.path)/rel_nope").status == .notFound)
            #expect(try await client.admin(.get, "/tenants/acme/products/nope/releases").status == .notFound)
            let actions = try await DashboardTests.auditActions(client)
            #expect(actions.filter { $0 == "release.create" }.count == 2 && actions.contains("release.publish") && actions.contains("release.yank"))
        }
    }

    @Test func badFieldsAreRefusedAndChangeNothing() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            let before = try await client.count("SELECT COUNT(*) AS n FROM releases")
            for body: [String: Any] in [
                [:], ["version": "1"], ["short_version": "1.0"], ["version": "1 2", "short_version": "1"], ["version": String(repeating: "1", count: 65), "short_version": "1"],
                ["version": "1", "short_version": "1\n2"], ["version": "1", "short_version": "1", "channel": "Beta"],
                ["version": "1", "short_version": "1", "released_at": 5], ["version": "1", "short_version": "1", "min_system_version": "13.x"],
                ["version": "1", "short_version": "1", "notes_markdown": String(repeating: "x", count: 40_000)],
                ["version": "1", "short_version": "1", "phased_rollout_interval_seconds": 10], ["version": "1", "short_version": "1", "critical_below": "a b"],
                ["version": "1", "short_version": "1", "platform": "darwin"],
            ] {
                let reply = try await client.admin(.post, Self.path, body)
                #expect(reply.status == .badRequest, "\(body): \(reply.status) \(reply.text)")
            }
            #expect(try await client.count("SELECT COUNT(*) AS n FROM releases") == before)
        }
    }

    @Test func aCITokenCanPublishOneProductsReleasesAndNothingElse() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            _ = try await client.admin(.post, "/tenants/acme/products", ["id": "other", "name": "Other", "key_prefix": "OTHR"])
            let token = try await TeamAccessTests.token(client, ["name": "ci-release", "tenant_id": "acme", "product_id": "app", "permissions": ["releases:publish"]])
            let created = try await client.admin(.post, Self.path, ["version": "7", "short_version": "1.7"], token: token)
            #expect(created.status == .created)
            // The CI token uploads the file too.
            try await Self.addArtifact(client, releaseId: try #require(created["id"] as? String), token: token)
            #expect(try await client.admin(.post, "\(Self.path)/\(created["id"] as? String ?? "")/publish", token: token).status == .ok)
            // It cannot mint, nor read licenses, nor touch another product.
            #expect(try await client.admin(.post, "/tenants/acme/products/app/licenses", ["key_type_id": seed.keyType], token: token).status == .forbidden)
            #expect(try await client.admin(.get, "/tenants/acme/products/app/licenses", token: token).status == .forbidden)
            #expect(try await client.admin(.post, "/tenants/acme/products/other/releases", ["version": "7", "short_version": "1.7"], token: token).status == .notFound)
            #expect(try #require(try await client.database.auditLog(limit: 20).first { $0.action == "release.publish" }).actor == "token:ci-release")
        }
    }

    @Test func notesBecomeSafeHTML() {
        #expect(MarkdownRenderer.html("<script>alert(1)</script>") == "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>")
        #expect(MarkdownRenderer.html("[x](javascript:alert(1))") == "<p>[x](javascript:alert(1))</p>")
        #expect(MarkdownRenderer.html("[site](https://example.com/a?b=1&c=\"2\")") == "<p>[site](https://example.com/a?b=1&amp;c=&quot;2&quot;)</p>")
        #expect(MarkdownRenderer.html("See [the site](https://example.com/a?b=1&c=2).") == "<p>See <a href=\"https://example.com/a?b=1&amp;c=2\">the site</a>.</p>")
        #expect(MarkdownRenderer.html("# Title\n\nOne **two** `<b>`\n\n1. a\n2. b\n\n```\n<x>\n```") ==
            "<h1>Title</h1>\n<p>One <strong>two</strong> <code>&lt;b&gt;</code></p>\n<ol><li>a</li><li>b</li></ol>\n<pre><code>&lt;x&gt;</code></pre>")
        #expect(MarkdownRenderer.html("") == "")
        // Unclosed markers stay text.
        #expect(MarkdownRenderer.html("a * b and `c") == "<p>a * b and `c</p>")
    }
}
