import Crypto
import Foundation
import KeylightCore
import KeylightSigning
@testable import KeylightServer
import Testing

/// The product page's app set-up: the Info.plist entries SDK 2 reads (a plist fragment that parses,
/// with the tenant's active and prepared keys), the Swift that reads them, all HTML-escaped.
@Suite(.timeLimit(.minutes(6))) struct ProductAppSetupTests {
    /// The text of `<pre … id="<id>" …>` as a browser shows it (and the Copy button copies it).
    static func block(_ id: String, in html: String) throws -> String {
        let start = try #require(html.range(of: "id=\"\(id)\" data-copy>"), "no #\(id) in the page")
        let rest = html[start.upperBound...]
        let end = try #require(rest.range(of: "</pre>"))
        return String(rest[..<end.lowerBound])
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// The fragment inside an Info.plist's `<dict>`, parsed as Xcode would.
    static func infoPlist(_ html: String) throws -> [String: Any] {
        let fragment = try block("info-plist", in: html)
        let document = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
        \(fragment)
        </dict>
        </plist>
        """
        let plist = try PropertyListSerialization.propertyList(from: Data(document.utf8), options: [], format: nil)
        return try #require(plist as? [String: Any], "not a dictionary: \(fragment)")
    }

    /// Each key as the SDK reads it: 32 bytes of base64, its kid derived from it.
    static func kids(_ keys: [String]) throws -> [String] {
        try keys.map { key in
            let raw = try #require(Data(base64Encoded: key))
            return SigningKey.defaultKid(for: try Curve25519.Signing.PublicKey(rawRepresentation: raw))
        }
    }

    @Test func theInfoPlistEntriesParseAndCarryTheProductAndBothKeys() async throws {
        var harness = Harness()
        harness.configuration.publicURL = "https://licenses.example.com"
        try await harness.run { client in
            try await DashboardTests.user(client)
            let browser = DashboardBrowser(client)
            try await browser.signIn(DashboardTests.email, DashboardTests.password)
            _ = try await browser.post("/dashboard/tenants", [("id", "north"), ("name", "North")])
            let created = try await browser.post("/dashboard/t/north/products", [
                ("id", "notes"), ("name", "Notes"), ("key_prefix", "note"), ("trial_duration_days", "21"), ("free_tier_enabled", "on"),
            ])
            #expect(created.status == .ok)
            let sdkKey = try #require(created.text.firstMatch(of: /kl_sdk_[A-Za-z0-9_-]+/).map { String($0.output) })
            let active = try #require(client.server.keyRing.current["north"]?.active)
            let activeKey = Base64.encode(active.publicKey.rawRepresentation)

            // Right after creation: the real SDK key, the one active key.
            let first = try Self.infoPlist(created.text)
            #expect(first["KeylightServerURL"] as? String == "https://licenses.example.com")
            #expect(first["KeylightTenant"] as? String == "north" && first["KeylightProduct"] as? String == "notes")
            #expect(first["KeylightSDKKey"] as? String == sdkKey)
            #expect(first["KeylightPublicKeys"] as? [String] == [activeKey])
            #expect(try Self.kids([activeKey]) == [active.kid])
            #expect(first["KeylightKeyPrefix"] as? String == "NOTE")
            #expect(first["KeylightTrialDays"] as? Int == 21 && first["KeylightFreeTier"] as? Bool == true)
            #expect(!created.text.contains("id=\"no-public-url\""))

            // Later: a placeholder instead of the key; a prepared key joins the active one.
            let prepared = try await client.admin(.post, "/tenants/north/signing-keys/prepare")
            #expect(prepared.status == .created, "\(prepared.status) \(prepared.text)")
            let next = try #require(client.server.keyRing.current["north"]?.next)
            _ = try await browser.post("/dashboard/t/north/p/notes", [("name", "Notes"), ("trial_duration_days", "0")])  // free tier off
            let page = try await browser.get("/dashboard/t/north/p/notes")
            #expect(!page.text.contains(sdkKey))
            let later = try Self.infoPlist(page.text)
            #expect(later["KeylightSDKKey"] as? String == AppSnippet.sdkKeyPlaceholder)
            let keys = try #require(later["KeylightPublicKeys"] as? [String])
            #expect(keys == [activeKey, next.publicKey])
            #expect(try Self.kids(keys) == [active.kid, next.kid])
            #expect(later["KeylightTrialDays"] as? Int == 0 && later["KeylightFreeTier"] as? Bool == false)
            #expect(later["KeylightTenant"] as? String == "north" && later["KeylightProduct"] as? String == "notes" && later["KeylightKeyPrefix"] as? String == "NOTE")

            // The Swift: the bundle way, the SwiftUI gating and the in-code configuration with the same values.
            #expect(try Self.block("swift-bundle", in: page.text).contains("let license = try LicenseManager(bundle: .main)"))
            #expect(try Self.block("swift-swiftui", in: page.text).contains("if !license.isResolved"))
            let inCode = try Self.block("swift-configuration", in: page.text)
            #expect(inCode.contains("serverURL: URL(string: \"https://licenses.example.com\")!"))
            #expect(inCode.contains("tenant: \"north\", product: \"notes\""))
            #expect(inCode.contains("\"\(activeKey)\",") && inCode.contains("\"\(next.publicKey)\",") && inCode.contains("keyPrefix: \"NOTE\",\n    trialDays: 0, freeTier: false\n)"))
            // Every block has a Copy button (data-copy).
            #expect(page.text.components(separatedBy: "class=\"snippet\"").count - 1 == 4)
        }
    }

    @Test func withoutAPublicURLTheServerURLIsThisRequestsHostAndThePageSaysSo() async throws {
        try await Harness().run { client in
            let (browser, _) = try await DashboardTests.signedIn(client)
            let page = try await browser.get("/dashboard/t/acme/p/app")
            let url = try #require(try Self.infoPlist(page.text)["KeylightServerURL"] as? String)
            #expect(url.hasPrefix("http://"))
            #expect(page.text.contains("id=\"no-public-url\""))
        }
    }

    @Test func operatorInputIsEscapedOnThePageAndInThePlist() async throws {
        var harness = Harness()
        // Not a likely URL, but a legal one: `&` must be XML-escaped inside the plist and HTML-escaped again on the page.
        harness.configuration.publicURL = "https://licenses.example.com/a&b"
        try await harness.run { client in
            try await DashboardTests.user(client)
            let browser = DashboardBrowser(client)
            try await browser.signIn(DashboardTests.email, DashboardTests.password)
            _ = try await browser.post("/dashboard/tenants", [("id", "evil"), ("name", "<script>alert(\"tenant\")</script>")])
            let created = try await browser.post("/dashboard/t/evil/products", [("id", "app"), ("name", "<script>alert('product')</script>"), ("key_prefix", "EVIL")])
            #expect(created.status == .ok)
            let page = try await browser.get("/dashboard/t/evil/p/app")
            for html in [created.text, page.text] {
                #expect(!html.contains("<script>alert"))
                #expect(html.contains("&lt;script&gt;alert(&#39;product&#39;)&lt;/script&gt;"))
                #expect(html.contains("&lt;script&gt;alert(&quot;tenant&quot;)&lt;/script&gt;"))
                #expect(html.contains("&lt;string&gt;https://licenses.example.com/a&amp;amp;b&lt;/string&gt;"))
                let plist = try Self.infoPlist(html)
                #expect(plist["KeylightServerURL"] as? String == "https://licenses.example.com/a&b")
                #expect(plist["KeylightTenant"] as? String == "evil" && plist["KeylightKeyPrefix"] as? String == "EVIL")
            }
        }
    }
}
